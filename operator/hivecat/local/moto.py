"""moto in server mode (Glue + S3 over HTTP) on a free loopback port, for tests and benchmarks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hivecat.local.net import free_port, wait_for_port


@contextmanager
def moto_server(log_path: Path, timeout: float = 30) -> Iterator[str]:
    """Start `moto_server` (the venv's own when there is one), yield its endpoint URL, stop it after.

    Raises RuntimeError (with the end of its log) when it does not start.
    """
    port = free_port()
    moto_bin = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or "moto_server"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([moto_bin, "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        try:
            wait_for_port(port, timeout=timeout, alive=lambda: process.poll() is None)
        except (TimeoutError, RuntimeError) as exc:
            raise RuntimeError(f"moto server did not start ({exc}): {log_path.read_text()[-2000:]}") from None
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
