"""The hivecat image, built here from the Dockerfile (scripts/build-image.sh: a debootstrap base, the lock's
packages, podman with runc) and run as a container the way the chart runs it: user 10001, read-only root, every
capability dropped, a writable /tmp. The real node (test_here.py) runs the same image as the operator's pod."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import yaml

from kube.clients import REPO
from kube.images import podman

# What the image weighs today (1.44 GB: Python, pyspark's jars, a Java 17 runtime): a jump past this is a
# packaging mistake (build tools or caches left in), so the test names it.
SIZE_BUDGET = 1_600_000_000
VALUES = yaml.safe_load((REPO / "charts/hivecat/values.yaml").read_text())
USER = f"{VALUES['podSecurityContext']['runAsUser']}:{VALUES['podSecurityContext']['runAsGroup']}"


def run(image: str, *args: str, volumes: tuple[str, ...] = (), entrypoint: str | None = None,
        timeout: float = 300) -> str:
    """The container as the chart's securityContext has it; returns stdout, fails with the container's stderr."""
    argv = ["run", "--rm", "--read-only", "--tmpfs=/tmp:rw,mode=1777", "--cap-drop=ALL",
            "--security-opt=no-new-privileges", "--network=none", *[f"--volume={v}" for v in volumes]]
    if entrypoint:
        argv.append(f"--entrypoint={entrypoint}")
    done = podman(*argv, image, *args, timeout=timeout, check=False)
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def locked_pins() -> dict[str, str]:
    text = (REPO / "requirements.lock").read_text()
    return {name.lower(): version for name, version in re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", text, re.M)}


def test_the_image_runs_as_the_charts_user_with_its_entrypoint_and_its_size(hivecat_image: str) -> None:
    [inspected] = json.loads(podman("image", "inspect", hivecat_image).stdout)
    config = inspected["Config"]
    assert config["User"] == USER and config["Entrypoint"] == ["hivecat"], config
    assert not any(e.startswith(("PIP_CERT=", "SSL_CERT_FILE=", "REQUESTS_CA_BUNDLE=")) for e in config["Env"])
    assert inspected["Size"] <= SIZE_BUDGET, f"{inspected['Size'] / 1e9:.2f} GB"
    assert re.match(r"hivecat \S+", run(hivecat_image, "--version"))
    assert "--standalone" in run(hivecat_image, "run", "--help")
    # who it runs as, and that nothing but /tmp is writable; the build secret (CA bundle) is not in it
    checks = run(hivecat_image, "-c", """
import os, pathlib
print(os.getuid(), os.getgid())
for path in ("/", "/opt/hivecat", "/etc", "/tmp"):
    try:
        pathlib.Path(path, ".probe").write_text("x")
        print(path, "writable")
    except OSError:
        print(path, "read-only")
print("secret", os.path.exists("/run/secrets/ca-bundle"))
""", entrypoint="python")
    assert checks.split("\n")[:6] == ["10001 10001", "/ read-only", "/opt/hivecat read-only", "/etc read-only",
                                      "/tmp writable", "secret False"], checks


def test_the_image_holds_exactly_the_locked_packages(hivecat_image: str) -> None:
    frozen = run(hivecat_image, "-m", "pip", "list", "--format=json", "--disable-pip-version-check",
                 entrypoint="python")
    installed = {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(frozen)}
    installed.pop("pip")
    assert installed.pop("hivecat")
    wanted = {name: version for name, version in locked_pins().items() if name not in ("cython", "wheel")}
    assert installed == wanted  # nothing missing, nothing extra, no other version


def test_distcp_in_the_image_with_the_local_and_the_spark_engine(hivecat_image: str, tmp_path: Path) -> None:
    source, target = tmp_path / "source" / "t", tmp_path / "target"
    for part in ("dt=1", "dt=2"):
        (source / part).mkdir(parents=True)
        (source / part / "part-0.csv").write_bytes(os.urandom(50_000))
    target.mkdir()
    os.chown(target, 10001, 10001)  # the container's user writes there, as on a volume with fsGroup
    volumes = (f"{tmp_path / 'source'}:/data/source:ro", f"{target}:/data/target")
    for engine in ("local", "spark"):
        out = run(hivecat_image, "distcp", "--from", "file:///data/source/t/dt=1",
                  "--to", f"file:///data/target/{engine}/dt=1", "--engine", engine, "--output", "json",
                  volumes=volumes)
        summary = json.loads(out)
        assert (summary["engine"], summary["status"]) == (engine, "succeeded"), summary
        copied = target / engine / "dt=1" / "part-0.csv"
        assert copied.read_bytes() == (source / "dt=1" / "part-0.csv").read_bytes()
