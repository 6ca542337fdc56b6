"""One relocation run per SQL catalog at a time: a server-side lock (MySQL GET_LOCK, PostgreSQL advisory
lock) held on a connection of its own, so it is released if the process dies."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

from hivecat.catalog.model import Refusal, RelocationRefused


@contextmanager
def run_lock(engine: sa.Engine, catalog_name: str) -> Iterator[None]:
    """Held for the block; refuses (reason `locked`) at once when another run holds it."""
    digest = hashlib.sha256(catalog_name.encode()).digest()
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            key = int.from_bytes(digest[:8], "big", signed=True)
            acquired = conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar()
            release = sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key}
        else:
            name = f"hivecat:{digest.hex()[:40]}"
            acquired = conn.execute(sa.text("SELECT GET_LOCK(:n, 0)"), {"n": name}).scalar() == 1
            release = sa.text("SELECT RELEASE_LOCK(:n)"), {"n": name}
        if not acquired:
            raise RelocationRefused([Refusal("locked", f"another hivecat run holds catalog {catalog_name}")])
        try:
            yield
        finally:
            conn.execute(*release)
            conn.commit()
