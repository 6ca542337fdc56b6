"""The AWS Glue Data Catalog as a hivecat Catalog (boto3)."""

from __future__ import annotations

from typing import Any

from hivecat.catalog.api.driver import ApiCatalog
from hivecat.catalog.glue.backend import MAX_BATCH_UPDATE, GlueBackend


class GlueCatalog(ApiCatalog):
    """A Glue catalog; relocation is journaled (no transactions in Glue) by the shared API driver.

    `client` is the boto3 Glue client every call goes through (credentials: boto3's usual chain).
    Consistency: tables are written with their VersionId (a concurrent change is reported, not
    clobbered); partitions, databases and functions are re-read right before each write, which leaves a
    window of one round trip in which a concurrent change can be overwritten (docs/relocate-consistency.md).
    """

    def __init__(self, region: str, *, catalog_id: str | None = None, endpoint_url: str | None = None,
                 journal_url: str | None = None, segments: int = 1, client: Any = None,
                 batch_size: int = MAX_BATCH_UPDATE, functions: bool = True):
        if client is None:
            from hivecat import aws

            client = aws.client("glue", region, endpoint_url)
        self.client = client
        name = f"glue://{region}" + (f"/{catalog_id}" if catalog_id else "")
        super().__init__(GlueBackend(client, name, catalog_id=catalog_id, segments=segments,
                                     batch_size=batch_size, functions=functions), journal_url)
