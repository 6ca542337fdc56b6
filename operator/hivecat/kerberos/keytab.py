"""The principals a keytab file holds (MIT's keytab format, versions 0x501 and 0x502), never its keys.

Read so that a login whose keytab lacks its principal is told exactly that, and which principals it does hold,
instead of GSS-API's "no credentials cache found" (it falls back to the ticket cache when the keytab has no key).
"""

from __future__ import annotations

import struct


class KeytabUnreadable(ValueError):
    pass


def principals(data: bytes) -> list[str]:
    """name@REALM of each entry, in file order, without duplicates."""
    if len(data) < 2 or data[0] != 5 or data[1] not in (1, 2):
        raise KeytabUnreadable("not a keytab (it does not start with MIT's keytab version 0x0501 or 0x0502)")
    order = "<" if data[1] == 1 else ">"  # version 1 is in the writer's (little-endian) byte order
    found: list[str] = []
    at = 2
    try:
        while at + 4 <= len(data):
            (size,) = struct.unpack_from(f"{order}i", data, at)
            at += 4
            if size <= 0:  # a hole left by a deleted entry
                at += -size
                continue
            if at + size > len(data):
                raise struct.error("short entry")
            entry = data[at:at + size]
            at += size
            (count,) = struct.unpack_from(f"{order}H", entry, 0)
            pos = 2
            if data[1] == 1:
                count -= 1  # version 1 counts the realm among the components
            parts: list[str] = []
            for _ in range(count + 1):  # the realm, then the components
                (length,) = struct.unpack_from(f"{order}H", entry, pos)
                parts.append(entry[pos + 2:pos + 2 + length].decode("utf-8", "replace"))
                pos += 2 + length
            name = f"{'/'.join(parts[1:])}@{parts[0]}"
            if name not in found:
                found.append(name)
    except struct.error:
        raise KeytabUnreadable("the keytab is truncated") from None
    return found


def holds(keytab_principals: list[str], principal: str) -> bool:
    """Whether `principal` (name@REALM, or a name that krb5 completes with the default realm) is among them."""
    if "@" in principal:
        return principal in keytab_principals
    return any(p.rsplit("@", 1)[0] == principal for p in keytab_principals)
