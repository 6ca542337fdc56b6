"""Loopback port helpers."""

from __future__ import annotations

import socket
import time


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (the caller binds it soon after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for_port(port: int, host: str = "127.0.0.1", timeout: float = 60.0, alive=lambda: True) -> None:
    """Block until something listens on host:port; `alive()` turning False aborts early."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(port, host):
            return
        if not alive():
            raise RuntimeError(f"process exited before listening on {host}:{port}")
        time.sleep(0.1)
    raise TimeoutError(f"nothing listened on {host}:{port} within {timeout:.0f}s")
