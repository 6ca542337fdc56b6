"""A Hive Metastore reached over Thrift (hmsclient) as a hivecat Catalog."""

from __future__ import annotations

import urllib.parse

from hivecat.catalog.api.driver import ApiCatalog
from hivecat.catalog.targets import DEFAULT_THRIFT_CONNECTIONS, ThriftSasl, check_thrift_connections
from hivecat.catalog.thrift.backend import DEFAULT_BATCH, ThriftBackend
from hivecat.catalog.thrift.clients import ClientPool
from hivecat.catalog.thrift.transport import metastore_client


class ThriftCatalog(ApiCatalog):
    """An HMS over Thrift; relocation is journaled by the shared API driver.

    `connections`: how many metastore connections a relocation writes chunks through at once (one is
    opened here, the others when first needed). HMS serves each connection on a thread of its own, so
    chunks in flight overlap their alter_partitions calls (benchmarks/relocate.py measures the gain).

    Consistency: Thrift has no compare-and-set, so each batch is re-read right before alter_partitions /
    alter_table; a change landing in between is overwritten (docs/relocate-consistency.md).
    """

    def __init__(self, uri: str, *, journal_url: str | None = None, batch_size: int = DEFAULT_BATCH,
                 connections: int = DEFAULT_THRIFT_CONNECTIONS, sasl: ThriftSasl | None = None):
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme != "thrift" or not parts.hostname or not parts.port:
            raise ValueError(f"expected thrift://HOST:PORT, not {uri!r}")
        check_thrift_connections(connections)
        host, port = parts.hostname, parts.port
        self.client = ClientPool(lambda: metastore_client(host, port, sasl).open(), connections)
        super().__init__(ThriftBackend(self.client, f"thrift://{host}:{port}", batch_size, connections),
                         journal_url)

    def close(self) -> None:
        self.client.close()
        super().close()
