"""Spec changes under load: each from its PATCH until the resource's status.observedGeneration shows the new
generation (the operator took the change up) and, apart, until its Ready condition's observedGeneration does (for a
TableReplica, its sync of the new spec). ClusterStorages toggle spec.scanInterval, TableReplicas
spec.schedule.interval, alternately."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from .env import Bench
from .figures import percentile, rounded
from .scenario import GROUP_PATH, SCAN_INTERVALS, SYNC_INTERVALS, Layout, replicas
from .watch import Key, Watcher


@dataclass
class Change:
    key: Key
    generation: int
    patched: float
    observed: float | None = None
    ready_observed: float | None = None

    @property
    def latency(self) -> float | None:
        return None if self.observed is None else self.observed - self.patched

    @property
    def ready_latency(self) -> float | None:
        return None if self.ready_observed is None else self.ready_observed - self.patched


def change_targets(layout: Layout, count: int, phase: int) -> list[Key]:
    """`count` resources, ClusterStorages and TableReplicas alternately, over every namespace in turn; the
    second phase takes others where there are enough."""
    storages = [("clusterstorages", layout.namespace(i), f"c{j:02d}")
                for j in range(max(layout.storages_in(i) for i in range(layout.namespaces)))
                for i in range(layout.namespaces) if j < layout.storages_in(i)]
    by_namespace: dict[str, list[Key]] = {}
    for r in replicas(layout):
        by_namespace.setdefault(r.namespace, []).append(("tablereplicas", r.namespace, r.name))
    trs = [lst[k] for k in range(max(len(v) for v in by_namespace.values()))
           for lst in by_namespace.values() if k < len(lst)]
    half = (count + 1) // 2
    pick_s = [storages[(phase * half + k) % len(storages)] for k in range(half)]
    pick_t = [trs[(phase * half + k) % len(trs)] for k in range(count - half)]
    out: list[Key] = []
    for k in range(half):
        out.append(pick_s[k])
        if k < len(pick_t):
            out.append(pick_t[k])
    return out


def make_changes(bench: Bench, watcher: Watcher, targets: list[Key], timeout: float, ready_wait: float,
                 phase_cap: float) -> list[Change]:
    api = bench.api()
    changes: list[Change] = []
    began = time.monotonic()
    for plural, ns, name in targets:
        if time.monotonic() - began > phase_cap or not bench.operator_alive():
            break
        path = f"{GROUP_PATH}/namespaces/{ns}/{plural}/{name}"
        spec = api.get(path)["spec"]
        if plural == "clusterstorages":
            current = spec.get("scanInterval")
            patch = {"spec": {"scanInterval": SCAN_INTERVALS[1] if current == SCAN_INTERVALS[0] else SCAN_INTERVALS[0]}}
        else:
            current = (spec.get("schedule") or {}).get("interval")
            patch = {"spec": {"schedule": {"interval": SYNC_INTERVALS[1] if current == SYNC_INTERVALS[0]
                                           else SYNC_INTERVALS[0]}}}
        key = (plural, ns, name)
        patched = time.monotonic()
        generation = api.merge_patch(path, patch)["metadata"]["generation"]
        change = Change(key, generation, patched)
        watcher.wait(lambda: watcher.observed_at(key, generation) is not None, timeout)
        with watcher.cond:
            change.observed = watcher.observed_at(key, generation)
        changes.append(change)
    # The Ready conditions' generations (a TableReplica's sync of the new spec) may come later: wait a while.
    watcher.wait(lambda: all(watcher.ready_observed_at(c.key, c.generation) is not None for c in changes), ready_wait)
    with watcher.cond:
        for change in changes:
            change.ready_observed = watcher.ready_observed_at(change.key, change.generation)
    return changes


def change_figures(changes: list[Change], prefix: str) -> dict[str, Any]:
    done = [c.latency for c in changes if c.latency is not None]
    ready = [c.ready_latency for c in changes if c.ready_latency is not None]
    # a change never observed counts as slower than any observed one
    all_obs = done + [math.inf] * (len(changes) - len(done))
    all_ready = ready + [math.inf] * (len(changes) - len(ready))
    out = {f"{prefix}_count": len(changes),
           f"{prefix}_p50_s": rounded(percentile(all_obs, 50)),
           f"{prefix}_p99_s": rounded(percentile(all_obs, 99)),
           f"{prefix}_max_s": rounded(max(all_obs)) if all_obs else -1.0,
           f"{prefix}_timeouts": len(changes) - len(done),
           f"{prefix}_ready_p50_s": rounded(percentile(all_ready, 50)),
           f"{prefix}_ready_p99_s": rounded(percentile(all_ready, 99)),
           f"{prefix}_ready_missing": len(changes) - len(ready)}
    for plural in ("clusterstorages", "tablereplicas"):
        kind = "cs" if plural == "clusterstorages" else "tr"
        mine = [c.latency for c in changes if c.key[0] == plural and c.latency is not None]
        mine_ready = [c.ready_latency for c in changes if c.key[0] == plural and c.ready_latency is not None]
        out[f"{prefix}_{kind}_p50_s"] = rounded(percentile(mine, 50))
        out[f"{prefix}_{kind}_ready_p50_s"] = rounded(percentile(mine_ready, 50))
    return out
