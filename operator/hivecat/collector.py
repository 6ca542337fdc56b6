"""Python's cyclic garbage collector, set for a long-running operator.

A collection stops every thread, the event loop's too, and a full one walks every object the process holds.
With CPython's defaults (a young collection every 700 net allocations) the operator at 1,000 resources ran 18
full collections in its first 2.5 minutes, up to 0.375 s each and 7.3 s of collection in all (measured with
gc.callbacks in benchmarks/operator_scale.py). Almost all of the operator's garbage is freed by reference
counting as it goes; the collector is there for the rare cycle, so it can run far less often.
"""

from __future__ import annotations

import gc

YOUNG = 50_000  # net allocations between young collections (CPython: 700)
MIDDLE = 20     # young collections per middle one (CPython: 10)
OLD = 10        # middle collections per full one (CPython: 10; a full one also waits for 25% new objects)


def settle_after_start() -> None:
    """What the operator loaded to start (modules, classes, kopf's registry, the clients) lives as long as the
    process: collect once, then move all of it out of the collector's reach (gc.freeze), so that a full
    collection walks only what the operator made since. Later collections run less often (YOUNG, MIDDLE, OLD)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG, MIDDLE, OLD)
