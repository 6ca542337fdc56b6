"""Custom resources parsed into frozen dataclasses, defaults applied: no kopf, no I/O.

The parsers repeat what the CRDs' schemas and CEL rules check, because a CR can reach the operator without
them (an older CRD, a cluster without CEL, a test): what they cannot accept raises SpecInvalid."""

from hivecat.specs.errors import SpecInvalid
from hivecat.specs.hivecatalog import (DatabaseSpec, GlueCredentialsRef, GlueSpec, HiveCatalogSpec, MetastoreSpec,
                                       SecretKeyRef, parse_hive_catalog)

__all__ = ["DatabaseSpec", "GlueCredentialsRef", "GlueSpec", "HiveCatalogSpec", "MetastoreSpec", "SecretKeyRef",
           "SpecInvalid", "parse_hive_catalog"]
