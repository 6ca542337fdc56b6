"""A Hive Metastore reached over Thrift (hmsclient) as a hivecat Catalog."""

from __future__ import annotations

import urllib.parse

from hivecat.catalog.api.driver import ApiCatalog
from hivecat.catalog.thrift.backend import DEFAULT_BATCH, ThriftBackend


class ThriftCatalog(ApiCatalog):
    """An HMS over Thrift; relocation is journaled by the shared API driver.

    Consistency: Thrift has no compare-and-set, so each batch is re-read right before alter_partitions /
    alter_table; a change landing in between is overwritten (docs/relocate-consistency.md).
    """

    def __init__(self, uri: str, *, journal_url: str | None = None, batch_size: int = DEFAULT_BATCH):
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme != "thrift" or not parts.hostname or not parts.port:
            raise ValueError(f"expected thrift://HOST:PORT, not {uri!r}")
        from hmsclient import hmsclient

        self.client = hmsclient.HMSClient(host=parts.hostname, port=parts.port)
        self.client.open()
        super().__init__(ThriftBackend(self.client, f"thrift://{parts.hostname}:{parts.port}", batch_size),
                         journal_url)

    def close(self) -> None:
        self.client.close()
        super().close()
