"""Names and labels of the objects a catalog owns (design.md, "Names on the cluster").

Object names are deterministic, so every pass finds what an earlier one created, and are valid DNS-1035
labels of at most 63 characters, which every kind here accepts (a Service's name is the strictest). A
catalog's own name may be a longer DNS subdomain, so a name that does not fit is shortened and made unique
again with a hash of the full catalog name. Label values get the same treatment (63 characters at most).
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

from hivecat.kinds import HIVE_CATALOG, LABEL_COMPONENT, LABEL_MANAGED_BY, LABEL_PART_OF, MANAGED_BY

MAX_NAME: Final = 63
_DNS_LABEL: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE: Final = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
_HASH_LEN: Final = 8

# Suffixes of a catalog's objects.
METASTORE: Final = "metastore"  # Deployment and Service
METASTORE_CONFIG: Final = "metastore-config"  # ConfigMap with the server's hive-site.xml
CLIENT: Final = "client"  # ConfigMap with the client configuration


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH_LEN]


def object_name(catalog: str, suffix: str | None) -> str:
    """<catalog>-<suffix>, a DNS-1035 label of at most 63 characters. No suffix: the catalog's own name,
    unchanged (the discovery ConfigMap, named exactly like the catalog as other operators do)."""
    if not suffix:
        return catalog
    wanted = f"{catalog}-{suffix}"
    if len(wanted) <= MAX_NAME and _DNS_LABEL.fullmatch(wanted):
        return wanted
    # Dots (allowed in a catalog's name, not in a Service's), a leading digit or too long: keep what fits
    # of the catalog, and the hash of its full name keeps two long catalogs apart.
    head = re.sub(r"[^-a-z0-9]", "-", catalog.lower())
    if not head[:1].isalpha():
        head = f"hc-{head}"
    room = MAX_NAME - len(suffix) - _HASH_LEN - 2
    if room < 1:
        raise ValueError(f"object name suffix {suffix!r} is too long")
    head = head[:room].rstrip("-")
    return f"{head}-{_digest(catalog)}-{suffix}"


def label_value(value: str) -> str:
    """`value` when it is a valid label value, else a shortened form that stays unique (hash of the whole)."""
    if len(value) <= MAX_NAME and _LABEL_VALUE.fullmatch(value):
        return value
    head = re.sub(r"[^-A-Za-z0-9_.]", "-", value)[:MAX_NAME - _HASH_LEN - 1].strip("-_.")
    return f"{head}-{_digest(value)}" if head else _digest(value)


def catalog_labels(spec_name: str, component: str) -> dict[str, str]:
    """The labels on every object of catalog `spec_name`; all of them are stable, so they also select."""
    catalog = label_value(spec_name)
    return {
        LABEL_MANAGED_BY: MANAGED_BY,
        LABEL_PART_OF: catalog,
        LABEL_COMPONENT: component,
        HIVE_CATALOG.label: catalog,
    }
