"""The copy engine's errors: bad input is refused before anything is written."""

from __future__ import annotations


class CopyInputError(Exception):
    """Bad input (missing source, overlapping source and target, unreadable credentials, malformed
    plan): the run is refused and nothing is written. The CLI exits 2."""
