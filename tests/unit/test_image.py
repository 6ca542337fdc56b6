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


def test_the_lock_pins_every_dependency_with_hashes_within_pyproject_ranges() -> None:
    """requirements.lock (what the image installs, `make lock`) is current with pyproject.toml: every
    dependency and image-build tool pinned to a version its range allows, and every pin has hashes."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    lock = (REPO / "requirements.lock").read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", lock.strip())
    pins = {}
    for entry in entries:
        if entry.startswith("#"):  # the header
            continue
        name, version = re.match(r"([A-Za-z0-9_.-]+)==(\S+)", entry).groups()
        assert "--hash=sha256:" in entry, f"{name} has no hash"
        pins[canonicalize_name(name)] = version
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for spec in [*project["dependencies"], *project["optional-dependencies"]["image-build"]]:
        requirement = Requirement(spec)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in requirements.lock: run `make lock`"
        assert requirement.specifier.contains(pins[name], prereleases=True), (name, pins[name], str(requirement))
    assert "--require-hashes" in DOCKERFILE.read_text()
