"""`kept`: the conditions another writer owns, stated again as the status shows them (a drift scan keeps the
registration's Ready and PolicyCompliant; a registration keeps the scan's Drifted)."""

from __future__ import annotations

from hivecat.reconcile.conditions import Condition, kept, merge

SHOWN = merge(None, [Condition("Ready", "False", "StorageNotAllowed", "no longer granted"),
                     Condition("Drifted", "Unknown", "CatalogNotFound", "gone"),
                     Condition("PolicyCompliant", "False", "StorageNotAllowed", "would be refused")], generation=3,
               now="2026-01-01T00:00:00Z")


def test_only_the_named_types_as_shown() -> None:
    assert kept(SHOWN, "Ready", "PolicyCompliant") == [
        Condition("Ready", "False", "StorageNotAllowed", "no longer granted"),
        Condition("PolicyCompliant", "False", "StorageNotAllowed", "would be refused")]
    assert kept(SHOWN, "Drifted") == [Condition("Drifted", "Unknown", "CatalogNotFound", "gone")]


def test_none_shown_none_kept() -> None:
    assert kept(None, "Ready") == [] and kept(SHOWN, "Degraded") == []
