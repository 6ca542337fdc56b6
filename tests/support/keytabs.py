"""Keytab files in MIT's format, made without a KDC: principals with made-up keys (for parsing, never a login)."""

from __future__ import annotations

import struct


def entry(realm: str, *components: str, version: int = 2, key: bytes = b"k" * 32) -> bytes:
    """One keytab entry of name components in `realm` (an aes256 key of 32 bytes unless `key` says otherwise)."""
    order = ">" if version == 2 else "<"
    count = len(components) + (1 if version == 1 else 0)
    body = struct.pack(f"{order}H", count)
    for part in (realm, *components):
        body += struct.pack(f"{order}H", len(part)) + part.encode()
    body += struct.pack(f"{order}IIB", 1, 1700000000, 2) + struct.pack(f"{order}HH", 18, len(key)) + key
    return struct.pack(f"{order}i", len(body)) + body


def keytab(*principals: str) -> bytes:
    """A version 0x502 keytab with one entry per name[/instance]@REALM."""
    data = bytes([5, 2])
    for principal in principals:
        name, realm = principal.rsplit("@", 1)
        data += entry(realm, *name.split("/"))
    return data
