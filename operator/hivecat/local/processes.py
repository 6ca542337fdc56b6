"""Stopping the local services' processes (metastores, HDFS, the test control plane), each started in a
process group of its own so that its children (JVM forks, shells) go with it."""

from __future__ import annotations

import os
import signal
import subprocess


def stop_process_group(process: subprocess.Popen | None, grace: float = 15.0) -> None:
    """SIGTERM to the group, then SIGKILL if it has not exited after `grace` seconds; a process that
    already exited is left alone."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)
    except ProcessLookupError:  # exited between poll() and killpg()
        pass
