"""Launchers: run the copy engine (`hivecat distcp --plan`) for one TableReplica and one secondary, and say how
the run ended. What a run achieved is never taken from here: the reconciler checks the units on the secondary
afterwards (replication/verify.py). The exit code and the engine's summary only explain a failure.

`Local` runs the command as a child process of the operator (the demo, tests, small tables on file:// and object
stores), with only the environment that copy needs (local_environment): never the operator's own journal URL,
Kubernetes credentials or cloud keys, unless the policy lets this namespace use the operator's identity there.
The Kubernetes Job and SparkApplication launchers build their objects in workloads/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from hivecat.copy.plan import CopyPlan
from hivecat.copy.storage import ENDPOINT_ENVS, HADOOP_USER_ENV, WEBHDFS_ENDPOINTS_ENV, Storage
from hivecat.specs.tablereplica import CopySettings

SUCCEEDED, FAILED, CANCELLED = "Succeeded", "Failed", "Cancelled"
POLL_SECONDS = 0.2
KILL_GRACE_SECONDS = 10.0  # after SIGTERM: the copy engine's staging is its run's own, a rerun cleans it up
LOG_TAIL = 2000  # characters of the child's stderr kept for the condition message


@dataclass(frozen=True)
class LaunchResult:
    outcome: str                      # SUCCEEDED | FAILED | CANCELLED
    message: str = ""
    copy_run_id: str | None = None    # the copy engine's run id, from its summary
    files_copied: int = 0
    bytes_copied: int = 0
    seconds: float = 0.0


def distcp_args(plan: str, copy: CopySettings, *, digest: str | None = None, engine: str | None = None,
                delete: bool = True) -> list[str]:
    """The copy engine's arguments after `distcp`, the same for every launcher. `digest` pins the plan read from
    a shared place. --delete: a unit's copy is hivecat's own (units whose target holds data without hivecat's
    manifest never reach a plan), so files gone from the source go from the copy too."""
    args = ["--plan", plan, *(["--plan-digest", digest] if digest else []), "--verify", copy.verify,
            "--engine", engine or copy.engine, *(["--delete"] if delete else [])]
    if copy.parallelism:
        args += ["--parallelism", str(copy.parallelism)]
    if copy.bandwidth_mbps:
        args += ["--bandwidth", str(copy.bandwidth_mbps)]
    return [*args, "--output", "json"]


# What a local copy process needs of the operator's environment: how to run (the interpreter, Java for the
# Spark engine), where storage is (administrator's settings). Credentials are added from the copy's Storage.
PASSED_ENV: Final = ("PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ", "PYTHONPATH", "JAVA_HOME", "SPARK_HOME",
                     "SPARK_LOCAL_IP", "PYSPARK_PYTHON", "HADOOP_CONF_DIR", "AWS_REGION", "AWS_DEFAULT_REGION",
                     *ENDPOINT_ENVS, WEBHDFS_ENDPOINTS_ENV)


def local_environment(storage: Storage | None, family: str = "", environ: Mapping[str, str] = os.environ
                      ) -> dict[str, str]:
    """The environment of a Local copy to a secondary of storage `family` (s3, hdfs, file): PASSED_ENV from the
    operator's, plus that secondary's S3 keys or HDFS user from its own Storage (`storage`; None: no
    credentials), as a copy Job gets the secondary's Secret."""
    env = {key: environ[key] for key in PASSED_ENV if key in environ}
    if storage is None:
        return env
    s3 = storage.s3
    if family == "s3" and s3.access_key and s3.secret_key:
        env.update(AWS_ACCESS_KEY_ID=s3.access_key, AWS_SECRET_ACCESS_KEY=s3.secret_key)
        if s3.session_token:
            env["AWS_SESSION_TOKEN"] = s3.session_token
    if family == "hdfs" and storage.webhdfs.user:
        env[HADOOP_USER_ENV] = storage.webhdfs.user
    return env


class LocalLauncher:
    """`hivecat distcp` as a child process, with the plan in a private temporary file."""

    def __init__(self, workdir: Path, environ: Mapping[str, str] | None = None) -> None:
        self.workdir, self.environ = workdir, environ

    def run(self, plan: CopyPlan, copy: CopySettings, stopped: Callable[[], bool] = lambda: False) -> LaunchResult:
        began = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.workdir, prefix="run-") as scratch:
            plan_path = Path(scratch) / "plan.json"
            plan_path.write_text(json.dumps(plan.to_dict()))
            out_path, err_path = Path(scratch) / "stdout", Path(scratch) / "stderr"
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                child = subprocess.Popen([sys.executable, "-m", "hivecat", "distcp", *distcp_args(str(plan_path), copy)],
                                         stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         env=dict(self.environ if self.environ is not None else os.environ))
                cancelled = _wait(child, stopped)
            stdout, stderr = out_path.read_text(errors="replace"), err_path.read_text(errors="replace")
        seconds = round(time.monotonic() - began, 3)
        if cancelled:
            return LaunchResult(CANCELLED, "the operator stopped during the run; the next run resumes it",
                                seconds=seconds)
        return _result(child.returncode, stdout, stderr, seconds)


def _wait(child: subprocess.Popen, stopped: Callable[[], bool]) -> bool:
    """Wait for the child; when `stopped` says so, terminate it (then kill). True when cancelled."""
    while child.poll() is None:
        if stopped():
            child.terminate()
            try:
                child.wait(KILL_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            return True
        time.sleep(POLL_SECONDS)
    return False


def _result(code: int, stdout: str, stderr: str, seconds: float) -> LaunchResult:
    summary = _summary(stdout)
    totals = (summary or {}).get("totals") or {}
    counts: dict[str, Any] = {"copy_run_id": (summary or {}).get("run_id"),
                              "files_copied": int(totals.get("files_copied") or 0),
                              "bytes_copied": int(totals.get("bytes_copied") or 0), "seconds": seconds}
    if code == 0:
        return LaunchResult(SUCCEEDED, "", **counts)
    if summary is not None:
        failed = [u for u in summary.get("units") or () if u.get("status") == "failed"]
        shown = "; ".join(f"{u.get('id')}: {u.get('reason')}" for u in failed[:3])
        more = f" (and {len(failed) - 3} more)" if len(failed) > 3 else ""
        return LaunchResult(FAILED, f"{len(failed)} unit(s) failed: {shown}{more}", **counts)
    tail = stderr.strip()[-LOG_TAIL:] or f"exit code {code}"
    return LaunchResult(FAILED, f"the copy ended with exit code {code}: {tail}", **counts)


def _summary(stdout: str) -> dict[str, Any] | None:
    try:
        found = json.loads(stdout)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None
