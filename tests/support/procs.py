"""The processes of this machine as /proc shows them: for tests that look at what a command started (its
children's command lines and environments), never at how fast."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple


class Process(NamedTuple):
    pid: int
    ppid: int
    session: int
    cmdline: bytes  # argv, NUL-separated


def processes() -> Iterator[Process]:
    """Every live process (one that exits meanwhile is left out)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            # After "pid (comm) ": state, ppid, pgrp, session, ... (comm may hold spaces and parentheses).
            fields = stat[stat.rindex(")") + 2:].split()
            yield Process(int(entry.name), int(fields[1]), int(fields[3]), (entry / "cmdline").read_bytes())
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
