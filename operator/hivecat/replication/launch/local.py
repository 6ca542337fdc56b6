"""The Local launcher: `hivecat distcp --plan` as a child process of the operator (the demo, tests, small tables
on file:// and object stores), with only the environment that copy needs (local_environment): never the
operator's own journal URL, Kubernetes credentials or cloud keys, unless the policy lets this namespace use the
operator's identity there.

The children are LocalRuns: started by one pass, read by a later one, at most `cap` at once (each is a Python
process of ~120 MB under the operator's memory limit); a start beyond the cap waits for a slot. A child dies
with the operator; after a restart its run is simply started again (each unit's staging is its run's own, and
the next run cleans it up). The demo goes the same way: its syncs take passes until no copy runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from hivecat.copy.plan import CopyPlan
from hivecat.copy.storage import (
    ENDPOINT_ENVS, HADOOP_USER_ENV, WEBHDFS_CA_BUNDLE_ENV, WEBHDFS_ENDPOINTS_ENV, WEBHDFS_PRINCIPAL_ENV, Storage,
)
from hivecat.kerberos.login import KEYTAB_ENV, PRINCIPAL_ENV
from hivecat.replication.launch import (CANCELLED, FAILED, RUNNING, SUCCEEDED, WAITING, LaunchResult,
                                        distcp_args)
from hivecat.specs.tablereplica import CopySettings

KILL_GRACE_SECONDS = 10.0  # after SIGTERM: the copy engine's staging is its run's own, a rerun cleans it up
LOG_TAIL = 2000  # characters of the child's stderr kept for the condition message

# What a local copy process needs of the operator's environment: how to run (the interpreter, Java for the
# Spark engine), where storage is (administrator's settings). Credentials are added from the copy's Storage.
PASSED_ENV: Final = ("PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ", "PYTHONPATH", "JAVA_HOME", "SPARK_HOME",
                     "SPARK_LOCAL_IP", "PYSPARK_PYTHON", "HADOOP_CONF_DIR", "AWS_REGION", "AWS_DEFAULT_REGION",
                     *ENDPOINT_ENVS, WEBHDFS_ENDPOINTS_ENV, WEBHDFS_CA_BUNDLE_ENV,
                     "KRB5_CONFIG")  # the administrator's realms and KDCs (never a ticket cache: KRB5CCNAME)

Key = tuple[str, str, str]  # (namespace, TableReplica, secondary)


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
    webhdfs = storage.webhdfs
    if family == "hdfs" and webhdfs.kerberos is not None and webhdfs.kerberos.keytab:
        # the keytab file the operator holds for this namespace (kerberos.store), as a copy Job mounts its Secret
        env.update({PRINCIPAL_ENV: webhdfs.kerberos.principal or "", KEYTAB_ENV: webhdfs.kerberos.keytab,
                    WEBHDFS_PRINCIPAL_ENV: webhdfs.http_principal or ""})
    elif family == "hdfs" and webhdfs.user:
        env[HADOOP_USER_ENV] = webhdfs.user
    return env


@dataclass
class _Child:
    process: subprocess.Popen
    scratch: Path              # the plan file and the child's output
    out: IO[bytes]
    err: IO[bytes]
    began: float
    units: tuple[str, ...]


def _spawn(workdir: Path, plan: CopyPlan, copy: CopySettings, environ: Mapping[str, str] | None) -> _Child:
    workdir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=workdir, prefix="run-"))
    plan_path = scratch / "plan.json"
    plan_path.write_text(json.dumps(plan.to_dict()))
    out, err = open(scratch / "stdout", "wb"), open(scratch / "stderr", "wb")
    process = subprocess.Popen([sys.executable, "-m", "hivecat", "distcp", *distcp_args(str(plan_path), copy)],
                               stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                               env=dict(environ if environ is not None else os.environ))
    return _Child(process, scratch, out, err, time.monotonic(), tuple(u.id for u in plan.units))


def _ended(child: _Child, cancelled: bool = False) -> LaunchResult:
    """The outcome of an ended child, its scratch directory removed."""
    child.out.close()
    child.err.close()
    stdout = (child.scratch / "stdout").read_text(errors="replace")
    stderr = (child.scratch / "stderr").read_text(errors="replace")
    shutil.rmtree(child.scratch, ignore_errors=True)
    seconds = round(time.monotonic() - child.began, 3)
    if cancelled:
        return LaunchResult(CANCELLED, "the operator stopped during the run; the next run resumes it",
                            seconds=seconds, units=child.units)
    return _result(child.process.returncode, stdout, stderr, seconds, child.units)


def _terminate(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(KILL_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class LocalRuns:
    """The operator's Local copy processes: one per (namespace, TableReplica, secondary), at most `cap` at once.
    Thread-safe: passes of many TableReplicas start and read them from their worker threads."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._children: dict[Key, _Child] = {}
        self._lock = threading.Lock()

    def start(self, key: Key, workdir: Path, plan: CopyPlan, copy: CopySettings,
              environ: Mapping[str, str] | None) -> LaunchResult:
        with self._lock:
            if key in self._children:
                return LaunchResult(RUNNING, "an earlier run is still copying", units=self._children[key].units)
            running = sum(c.process.poll() is None for c in self._children.values())
            if running >= self.cap:
                return LaunchResult(WAITING, f"{running} Local copies run already, the most this operator runs at "
                                             "once (Helm value concurrency.localCopies): this one starts when one ends")
            self._children[key] = _spawn(workdir, plan, copy, environ)
            return LaunchResult(RUNNING, units=self._children[key].units)

    def observe(self, key: Key) -> LaunchResult | None:
        with self._lock:
            child = self._children.get(key)
            if child is None:
                return None
            if child.process.poll() is None:
                return LaunchResult(RUNNING, units=child.units, seconds=round(time.monotonic() - child.began, 3))
            del self._children[key]
        return _ended(child)

    def running(self) -> int:
        return sum(c.process.poll() is None for c in list(self._children.values()))

    def ended(self, replica: tuple[str, str]) -> bool:
        """Whether a run of TableReplica (namespace, name) has ended and waits to be read: cheap, for the
        event loop."""
        return any(k[:2] == replica and c.process.poll() is not None for k, c in list(self._children.items()))

    def cancel(self, replica: tuple[str, str] | None = None) -> int:
        """Stop the runs of one TableReplica, (namespace, name), when it goes; of every one (None) when the
        operator stops. How many there were."""
        with self._lock:
            keys = [k for k in self._children if replica is None or k[:2] == replica]
            children = [self._children.pop(k) for k in keys]
        for child in children:
            if child.process.poll() is None:
                _terminate(child.process)
            _ended(child, cancelled=True)
        return len(children)


class LocalLauncher:
    """`hivecat distcp` as a child process of the operator (or the demo), with the plan in a private temporary
    file: a start returns at once, and a later observe reads the end (`runs` keeps the children)."""

    def __init__(self, workdir: Path, runs: LocalRuns, key: Key, environ: Mapping[str, str] | None = None) -> None:
        self.workdir, self.runs, self.key, self.environ = workdir, runs, key, environ

    def observe(self) -> LaunchResult | None:
        return self.runs.observe(self.key)

    def start(self, plan: CopyPlan, copy: CopySettings) -> LaunchResult:
        return self.runs.start(self.key, self.workdir, plan, copy, self.environ)


def _result(code: int, stdout: str, stderr: str, seconds: float, units: tuple[str, ...]) -> LaunchResult:
    summary = _summary(stdout)
    totals = (summary or {}).get("totals") or {}
    counts: dict[str, Any] = {"copy_run_id": (summary or {}).get("run_id"),
                              "files_copied": int(totals.get("files_copied") or 0),
                              "bytes_copied": int(totals.get("bytes_copied") or 0), "seconds": seconds,
                              "units": units}
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
