"""The real operator process (`hivecat run --standalone`) against the test control plane."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HIVECAT = Path(sys.executable).parent / "hivecat"  # the console script `pip install -e .` put in the venv
# Run the tests against the operator of another checkout, e.g. the commit before a fix, to see a new test fail
# there: HIVECAT_TEST_OPERATOR_PYTHONPATH=/path/to/that/checkout/operator (the tests themselves stay as they are).
OTHER_BUILD_ENV = "HIVECAT_TEST_OPERATOR_PYTHONPATH"


@dataclass
class OperatorProcess:
    kubeconfig: Path
    log_path: Path
    namespace: str | None  # None: every namespace but kube-system; "a,b": namespaces a and b
    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # added to (and overriding) the test's environment
    # A pod's own command line and environment instead (e2e/: the chart's container as the kubelet starts it)
    command: tuple[str, ...] = ()
    inherit_env: bool = True  # False: only KUBECONFIG and `env`, as in a container
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    ready_seconds: float = field(default=0.0, init=False)

    @property
    def argv(self) -> list[str]:
        if self.command:
            return list(self.command)
        # None: every namespace but kube-system, as the chart's clusterWide runs it
        scope = (["--namespace=!kube-system"] if self.namespace is None
                 else [a for ns in self.namespace.split(",") for a in ("-n", ns)])
        return [str(HIVECAT), "run", "--standalone", "--verbose", *scope, *self.extra_args]

    def watching(self, plural: str) -> bool:
        """kopf has started its watch of `plural` (it logs this at --verbose)."""
        return f"Starting the watch-stream for {plural} " in self.log()

    def start(self, is_ready: Callable[[], bool], timeout: float = 30) -> None:
        """Start, then wait until is_ready() (e.g. its watch has started) or fail with the log."""
        # The first syncs after a start all at once (the chart spreads them over 30 s): a test that restarts the
        # operator waits for them, and the spread is the benchmark's to measure (benchmarks/operator_scale.py).
        env = {**(os.environ if self.inherit_env else {}), "KUBECONFIG": str(self.kubeconfig),
               "PYTHONUNBUFFERED": "1", "HIVECAT_STARTUP_SPREAD_SECONDS": "0", **self.env}
        if os.environ.get(OTHER_BUILD_ENV):  # the operator of another checkout (its `operator/` directory)
            env["PYTHONPATH"] = os.environ[OTHER_BUILD_ENV]
        started = time.monotonic()
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        while not is_ready():
            if self.process.poll() is not None:
                raise AssertionError(f"the operator exited with {self.process.returncode}:\n{self.log()}")
            if time.monotonic() - started > timeout:
                raise AssertionError(f"the operator was not ready after {timeout}s:\n{self.log()}")
            time.sleep(0.02)
        self.ready_seconds = time.monotonic() - started

    def stop(self, grace: float = 10) -> int:
        """SIGTERM (kopf's graceful shutdown), then SIGKILL if it does not exit within `grace` seconds."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
