"""e2e/: the kind flow (test_kind.py) and the same flow on this machine's control plane (test_here.py)."""

from __future__ import annotations

import pytest

from kube.fixtures import report_timings


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    report_timings(terminalreporter, "e2e")
