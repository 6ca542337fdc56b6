"""Shared by every tier: reports how long each real service took to start."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    from support.services import START_SECONDS

    if START_SECONDS:
        started = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in START_SECONDS.items())
        terminalreporter.write_line(f"service start times: {started}")
