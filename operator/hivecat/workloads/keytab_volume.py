"""The keytab of a pod the operator builds (a kerberized copy Job, a kerberized metastore): one Secret key as one
file, and the pod group that lets the image's user read it."""

from __future__ import annotations

from typing import Any, Final

KEYTAB_FILE: Final = "keytab"
# The kubelet writes a Secret's files as root. Given a pod fsGroup, it gives them that group, group-readable
# (mode 0400 becomes 0440), and the pod's processes that group as a supplementary one: so the image's user,
# whatever its uid (hivecat's 10001, apache/hive's 1000), reads the keytab, and nobody outside the pod does.
# Without it the file stays root's 0400 and the login fails with "Permission denied" (e2e/test_pod_files.py).
KEYTAB_FS_GROUP: Final = 10001


def keytab_volume(name: str, secret: str, key: str) -> dict[str, Any]:
    """A Secret volume holding only `key`, as KEYTAB_FILE, readable by owner and group (see KEYTAB_FS_GROUP)."""
    return {"name": name, "secret": {"secretName": secret, "defaultMode": 0o400,
                                     "items": [{"key": key, "path": KEYTAB_FILE}]}}
