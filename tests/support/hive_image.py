"""A stand-in for the metastore image, so tests can run a pod's own command on this machine.

No containers run here (kwok only marks pods Ready and Job pods complete). Where a test needs the work a
pod would do, it takes the container's command, args and env from the object the operator created and runs
them in this "image": a HIVE_HOME whose bin/schematool and bin/hive are small wrappers that exec java on the
cached standalone metastore release (tests/support/hive_metastores.py) plus the JDBC driver, with
HIVE_CONF_DIR first on the classpath as the image's own scripts do. HIVE_CONF_DIR holds the files of the
ConfigMap the pod mounts; Secret-backed env vars get the Secret's value, as the kubelet would give them.

Where the stand-in differs from a full Hive image, it says so: its hcatalog directory holds only the
notification listener (for 4.0.x a stand-in of it, see tests/support/notification_log.py); the standalone
metastore lacks hive-exec, so bin/hive adds the release's settings that avoid hive-exec classes (HiveRelease.conf), and it takes the
Thrift port from HIVE_STANDIN_PORT because many tests share this machine's 9083.

`watch` samples what `ps` in the pod would show: the command line of every process the container's command
started (its shell, the wrappers, the JVM), read from /proc while they run.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hivecat.local.java import java_executable
from hivecat.local.metastore import MARIADB_JDBC_JAR, POSTGRESQL_JDBC_JAR
from support.hive_metastores import HMS_MAIN_CLASS, HiveRelease, release_home
from support.notification_log import listener_jar, stand_in_listener_jar
from support import jvm_flags
from support.kube_resources import container_env
from support.procs import processes

STANDIN_PORT_ENV = "HIVE_STANDIN_PORT"
# The standalone defaults name hive-exec classes; a full Hive image has them.
STANDALONE_CONF = {
    "metastore.expression.proxy": "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
    "metastore.event.db.notification.api.auth": "false",
    "hive.metastore.event.db.notification.api.auth": "false",
    "metastore.async.log.enabled": "false",
}


class StandInImage:
    def __init__(self, root: Path, release: HiveRelease, dialect: str) -> None:
        self.root, self.release = Path(root), release
        self.home = self.root / "hive-home"
        (self.home / "bin").mkdir(parents=True, exist_ok=True)
        metastore_home = release_home(release)
        driver = MARIADB_JDBC_JAR if dialect == "mysql" else POSTGRESQL_JDBC_JAR
        # bin/hive adds HIVE_AUX_JARS_PATH (commas between jars) to the classpath: so does the stand-in
        classpath = (f'"$HIVE_CONF_DIR":{shlex.quote(str(metastore_home))}/*:{shlex.quote(driver)}'
                     ':"$(printf %s "${HIVE_AUX_JARS_PATH:-}" | tr , :)"')
        java = f"{shlex.quote(java_executable())} -Xmx512m -cp {classpath}"
        self._hcatalog(release, metastore_home)
        prelude = f"#!/bin/sh\nexport METASTORE_HOME={shlex.quote(str(metastore_home))}\n"
        self._script("schematool", prelude + f'exec {java} {release.schema_tool} "$@"\n')
        conf = " ".join(f"--hiveconf {shlex.quote(f'{k}={v}')}" for k, v in {**STANDALONE_CONF, **release.conf}.items())
        # `hive --service metastore ARGS`: the image's launcher; here the metastore's main class directly.
        # bin/ext/metastore.sh puts HIVE_METASTORE_HADOOP_OPTS into HADOOP_OPTS, which hadoop's launcher gives the JVM
        self._script("hive", prelude + '[ "$1" = --service ] && [ "$2" = metastore ] && shift 2\n'
                     f'exec {java} $HIVE_METASTORE_HADOOP_OPTS $HADOOP_OPTS {HMS_MAIN_CLASS} -p "${STANDIN_PORT_ENV}" '
                     f'{conf} "$@"\n')

    def _hcatalog(self, release: HiveRelease, metastore_home: Path) -> None:
        """DbNotificationListener where Apache Hive's binary distribution keeps it: the release's own (3.1.3), or
        for 4.0.x, which publishes none, tests/java/StandInNotificationListener.java under Hive's class name."""
        hcatalog = self.home / "hcatalog" / "share" / "hcatalog"
        hcatalog.mkdir(parents=True, exist_ok=True)
        link = hcatalog / f"hive-hcatalog-server-extensions-{release.version}.jar"
        if not link.exists():
            link.symlink_to(stand_in_listener_jar([f"{metastore_home}/*"]) if release.version.startswith("4.0")
                            else listener_jar(release.version))

    def _script(self, name: str, text: str) -> None:
        path = self.home / "bin" / name
        path.write_text(text)
        path.chmod(0o755)

    def environment(self, container: Mapping[str, Any], secrets: Mapping[tuple[str, str], str],
                    conf_dir: Path, extra: Mapping[str, str] = {}, mounts: Mapping[str, Path] = {}
                    ) -> dict[str, str]:
        """The container's env as the kubelet resolves it, with HIVE_HOME and HIVE_CONF_DIR pointing here, and
        every other path of a volume mount (`mounts`: mount path in the pod → directory here) where it is here."""
        env = {"PATH": os.environ["PATH"], "HOME": str(self.root), **jvm_flags.passed_on(), **extra,
               **container_env(dict(container), lambda name, key: secrets[(name, key)])}
        pod_conf_dir = env.get("HIVE_CONF_DIR")
        env["HIVE_HOME"], env["HIVE_CONF_DIR"] = str(self.home), str(conf_dir)
        here = {**({pod_conf_dir: Path(conf_dir)} if pod_conf_dir else {}), **mounts}
        resolved = {}
        for name, value in env.items():
            # $(HIVE_HOME) in a later variable: the kubelet expands it from the container's own HIVE_HOME
            value = value.replace("$(HIVE_HOME)", env["HIVE_HOME"])
            for pod_path, path in here.items():
                value = value.replace(pod_path + "/", f"{path}/")
            resolved[name] = value
        return resolved

    @staticmethod
    def conf_dir(root: Path, files: Mapping[str, str]) -> Path:
        """A directory holding a ConfigMap's files, as its volume mount would."""
        directory = Path(root) / "conf"
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (directory / name).write_text(text)
        return directory

    @staticmethod
    def argv(container: Mapping[str, Any]) -> list[str]:
        return [*(container.get("command") or ()), *(container.get("args") or ())]

    def run(self, container: Mapping[str, Any], env: Mapping[str, str], timeout: float = 300) -> str:
        """Run a container's command to completion; its output, or AssertionError with the output's tail."""
        done = subprocess.run(self.argv(container), env=dict(env), cwd=self.root, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{self.argv(container)[:3]}… exited {done.returncode}:\n{output[-3000:]}"
        return output

    def start(self, container: Mapping[str, Any], env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
        """Start a long-running container command (the metastore) in its own process group and session."""
        with open(log, "wb") as out:
            return subprocess.Popen(self.argv(container), env=dict(env), cwd=self.root, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


def session_command_lines(leader: int) -> list[bytes]:
    """The command line of every live process in the session that `leader` leads, i.e. everything a command
    started with start_new_session=True runs."""
    return [process.cmdline for process in processes() if process.session == leader]


def watch(process: subprocess.Popen[bytes], done: Callable[[], bool], timeout: float = 300,
          interval: float = 0.02) -> set[bytes]:
    """Every distinct command line seen in `process`'s session (see start) until `done()` or the process exits."""
    seen: set[bytes] = set()
    deadline = time.monotonic() + timeout
    while process.poll() is None and not done():
        assert time.monotonic() < deadline, f"still running after {timeout} s"
        seen.update(session_command_lines(process.pid))
        time.sleep(interval)
    return seen
