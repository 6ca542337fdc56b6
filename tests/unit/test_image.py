"""The image, without a Docker engine (the kind end-to-end builds it for real): the Dockerfile passes hadolint,
the commands the chart and the copy workloads run exist in the environment hivecat is installed in, and the
paths and user the Dockerfile sets are the ones the chart and the workload builders name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from hivecat.workloads.spark_application import ENTRY_FILE

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
BIN = Path(sys.executable).parent


def test_the_dockerfile_passes_hadolint() -> None:
    done = subprocess.run([str(BIN / "hadolint"), str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_final_stage_runs_as_the_charts_numeric_user_without_build_tools() -> None:
    text = DOCKERFILE.read_text()
    final = text[text.rindex("\nFROM "):]
    values = yaml.safe_load((REPO / "charts/hivecat/values.yaml").read_text())
    user = values["podSecurityContext"]["runAsUser"]
    assert re.search(rf"^USER {user}:{values['podSecurityContext']['runAsGroup']}$", final, re.M)
    assert not re.search(r"\b(gcc|g\+\+|make|build-essential|-dev)\b", final)
    assert 'ENTRYPOINT ["hivecat"]' in final


def test_the_entrypoint_commands_exist() -> None:
    for args in (["--help"], ["distcp", "--help"], ["run", "--help"], ["relocate", "--help"]):
        done = subprocess.run([str(BIN / "hivecat"), *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (args, done.stderr)


def test_the_spark_copy_entry_file_is_linked_where_spark_applications_look() -> None:
    path = ENTRY_FILE.removeprefix("local://")
    assert path == "/opt/hivecat/spark_copy.py" and path in DOCKERFILE.read_text()
    import hivecat.commands.spark_copy as entry  # the file the link points at

    assert Path(entry.__file__).is_file()
