"""The copy engine's errors: bad input is refused before anything is written."""

from __future__ import annotations


class CopyInputError(Exception):
    """Bad input (missing source, overlapping source and target, unreadable credentials, malformed
    plan): the run is refused and nothing is written. The CLI exits 2."""


class AuthenticationFailed(PermissionError):
    """We and a store could not prove who we are to each other (a Kerberos login that fails, a namenode that
    refuses it, a TLS certificate that is not trusted): one line, no secret. Before a run it is bad input (the CLI exits 2); during one, the unit it stopped fails."""
