"""Shared by every tier: reports how long each real service took to start; each test gets its own AWS clients."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def own_aws_clients() -> Iterator[None]:
    """hivecat shares AWS clients process-wide (hivecat/aws.py): a test that hooks an event on one (to count or
    check calls) must not leave the hook on the client the next test gets."""
    yield
    from hivecat import aws

    aws.forget()


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    from support.services import START_SECONDS

    if START_SECONDS:
        started = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in START_SECONDS.items())
        terminalreporter.write_line(f"service start times: {started}")
