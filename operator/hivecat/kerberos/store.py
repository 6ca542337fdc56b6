"""Keytabs the operator holds for namespaces: each in a file of its own, readable by the operator's user only.

GSS-API reads a client keytab from a file, so a keytab that arrives as a Secret's bytes is written to a file under
a directory of the operator's (0700; the chart mounts an emptyDir in memory there), named by a digest of its owner,
principal and bytes: a rotated keytab is another file, hence another login with a ticket cache of its own
(login.py), and the previous file of that owner and principal is removed. The bytes are never logged; the file
name reveals nothing of them but a truncated digest.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from hivecat.kerberos.login import KerberosLogin, forget


class KeytabStore:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._lock = threading.Lock()
        self._current: dict[tuple[str, str], Path] = {}

    def login(self, owner: str, principal: str, keytab: bytes) -> KerberosLogin:
        """The login of `principal` with `keytab`, on behalf of `owner` (a namespace)."""
        digest = hashlib.sha256(b"\0".join([owner.encode(), principal.encode(), keytab])).hexdigest()[:32]
        path = self.directory / f"{digest}.keytab"
        with self._lock:
            if not path.exists():
                self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                os.chmod(self.directory, 0o700)
                partial = path.with_suffix(".partial")
                descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(descriptor, "wb") as file:
                    file.write(keytab)
                os.replace(partial, path)
            previous = self._current.get((owner, principal))
            if previous is not None and previous != path:
                forget(KerberosLogin(principal, str(previous)))
                previous.unlink(missing_ok=True)
            self._current[(owner, principal)] = path
        return KerberosLogin(principal, str(path))
