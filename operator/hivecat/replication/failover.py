"""Moving a table's locations (`SDS.LOCATION` of the table and its partitions) from the cluster they point at to
another one holding complete, verified copies: failover to a secondary, failback to the primary.

The gate, checked at switch time from the data (replication/verify.py), not from bookkeeping alone:
- every unit of the table under the current cluster is in scope (a partition outside spec.partitions would
  move with the table and point at a copy that does not exist);
- failover (to a cluster holding copies): every unit's copy there is whole and current against the original;
- failback (to the primary, whose directories are the user's originals): a unit whose original is still what
  its copy on the current cluster was made from goes back to the original. A unit changed while failed over
  (written on the current cluster, or added there) is copied from the current cluster into a new directory of
  hivecat's on the primary, `<primary>/.hivecat/failback/<namespace>/<replica>/g<N>/<path>`, verified, and
  pointed at there: the user's original directories are never written, and stay until removed by hand.

The switch itself is the location engine's relocation (journaled and undoable like a drift repair, on every
backend of the catalog): first each changed unit to its new directory, then the rest of the table from every
prefix of the current cluster to the target's filesystem. It moves exactly what was verified: each location
compare-and-set against the one the check read (RelocationRequest.expected_locations), so a unit added, or
pointed elsewhere, after the check stays where it is. A location cannot show a file appended to a unit: the
moved units are listed again after the write and before it commits (SQL in one transaction; elsewhere the run
is undone), and a unit found changed is taken out and the switch written again without it. Units so left
under the current cluster are named (`left_behind`); the next pass copies them and finishes the switch.
A switch cut short leaves each unit pointing at a whole copy; the next pass finishes it (units already moved
are no longer under the current cluster). What no check sees: a file appended after that second listing, or
written by path to the old directory afterwards (docs/operations.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyarrow import fs as pafs

from hivecat import reasons
from hivecat.catalog.base import Catalog
from hivecat.catalog.model import CHANGED_AFTER_CHECK, RelocationRefused, RelocationReport, RelocationRequest, Scope
from hivecat.copy.errors import CopyInputError
from hivecat.copy.plan import Unit, check_overlaps
from hivecat.copy.storage import Storage, parse_uri
from hivecat.locations.prefix import rebase
from hivecat.replication.registry import ClusterEntry
from hivecat.replication.bookkeeping import replica_key
from hivecat.replication.divergence import diverged
from hivecat.specs.tablereplica import PRIMARY_WINS, SECONDARY_WINS
from hivecat.replication.planner import PlanRefused, ReplicaPlan, ReplicaScope, plan_replica
from hivecat.copy.owner import Owner
from hivecat.replication.verify import (IN_SYNC, NOT_OWNED, SOURCE_MISSING, STALE, RecordedCopy, check_copies,
                                       check_units)

SHOWN = 5
FAILBACK_DIR = ".hivecat/failback"  # below a primary's filesystem: units changed while failed over
CHANGED = (STALE, SOURCE_MISSING, NOT_OWNED)  # failback: the copy differs from the original, or has none


class SwitchRefused(PlanRefused):
    """The switch would point a unit at data that is not there or not current; nothing was written."""


@dataclass(frozen=True)
class Switch:
    source: ClusterEntry   # where the locations point now
    target: ClusterEntry   # where they are to point
    failback: bool         # the target is the primary: its directories are the originals
    home: str = ""         # failback: "<namespace>/<replica>", whose directory on the primary holds changed units


@dataclass(frozen=True)
class Moved:
    """A unit changed while failed over: its copy to make (current cluster -> new directory on the primary) and
    its location as the catalog spells it (what the relocation of that one unit starts from)."""

    unit: Unit
    location: str


# The verified units named by id, listed again: {unit id: why it is no longer what was verified}.
Relist = Callable[[Collection[str]], dict[str, str]]


def units_relist(units: Sequence[Unit], storage: Storage, verify: str, owner: Owner | None) -> Relist:
    """A planned switch's second listing: both sides again (check_units), in sync or not."""
    return _relist({u.id: u for u in units}, lambda listed: [
        (c.unit.id, c.reason) for c in check_units(listed, storage, verify, owner=owner) if not c.in_sync])


def copies_relist(copies: Sequence[RecordedCopy], storage: Storage, verify: str, owner: Owner | None) -> Relist:
    """An unplanned switch's second listing: the copies again, from themselves (check_copies)."""
    return _relist({c.unit_id: c for c in copies}, lambda listed: [
        (c.copy.unit_id, c.reason) for c in check_copies(listed, storage, verify, owner=owner) if not c.whole])


def _relist(by_id: Mapping[str, Any], check: Callable[[list[Any]], list[tuple[str, str]]]) -> Relist:
    def relist(ids: Collection[str]) -> dict[str, str]:
        return dict(check([by_id[i] for i in ids if i in by_id]))
    return relist


@dataclass(frozen=True)
class SwitchPlan:
    units: int                              # units that move
    changed: tuple[Moved, ...] = field(default=())  # failback: units that go to new directories
    # unit id -> its location when verified, as the catalog spelled it (the table's own location under its id
    # too when partitioned, as TABLE_ROOT): what the switch moves, each compare-and-set against that value
    verified: Mapping[str, str] = field(default_factory=dict)
    relist: Relist | None = field(default=None, compare=False)  # the second listing of the verified units
    behind: tuple[str, ...] = field(default=())  # unplanned, leaving units behind: "<unit id>: why" of each
    diverged: tuple[str, ...] = field(default=())  # failback: "<unit id>: why" of units held (both sides changed)
    originals_won: tuple[str, ...] = field(default=())  # failback: diverged units pointed back at their originals


TABLE_ROOT = ""  # SwitchPlan.verified's key of a partitioned table's own location


def _in_scope(catalog: Catalog, scope: ReplicaScope, switch: Switch, word: str, reason: str) -> ReplicaPlan:
    """The units that move, refused when some unit of the table under the source is outside spec.partitions (it
    would move with the table and point at a copy that does not exist). Reads the catalog only."""
    whole = plan_replica(catalog, ReplicaScope(scope.database, scope.table), switch.source, switch.target)
    planned = plan_replica(catalog, scope, switch.source, switch.target)
    left_out = sorted(set(whole.unit_ids) - set(planned.unit_ids))
    if left_out:
        raise SwitchRefused(reason, f"{word} moves every location of the table, and {len(left_out)} units under "
                                    f"{switch.source.name} are outside spec.partitions (no copy is kept for them): "
                                    f"{_first(left_out)}")
    return planned


def _verified(catalog: Catalog, scope: ReplicaScope, planned: ReplicaPlan, ids: Collection[str]) -> dict[str, str]:
    """The locations a switch moves: the units `ids` as the catalog spelled them, and a partitioned table's own."""
    verified = {uid: ref.location for uid, ref in planned.refs.items() if uid in ids}
    table = catalog.get_table(scope.database, scope.table)
    if table is not None and table.partition_keys and table.location:
        verified[TABLE_ROOT] = table.location
    return verified


def unanswered(storage: Storage, cluster: ClusterEntry) -> str | None:
    """Why `cluster`'s filesystem does not answer (its root cannot be read), or None when it does."""
    try:
        root = parse_uri(cluster.filesystem, f"the filesystem of {cluster.name}")
        found = storage.filesystem(root).get_file_info(root.path or "/")
    except (OSError, CopyInputError) as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    if found.type == pafs.FileType.NotFound and root.scheme != "s3":  # an S3 prefix exists only while it holds keys
        return f"its root {root.uri} is not there"
    return None


def check_switch(catalog: Catalog, scope: ReplicaScope, switch: Switch, storage: Storage, verify: str, *,
                 owner: Owner | None = None, diverged_winner: str | None = None) -> SwitchPlan:
    """Refuse (SwitchRefused) unless every unit may move; what moves, and (failback) what must be copied first.
    `owner`: the TableReplica whose copies these are (a copy another owner made is never switched to). The
    originals are read: a primary that does not answer refuses it (an unplanned failover does not read it).
    A failback holds a diverged unit (replication/divergence.py) where it is, unless `diverged_winner` says
    which version the table points at: the original (Primary) or the secondary's, copied to a new directory
    (Secondary); the other is kept where it is either way."""
    word = "failback" if switch.failback else "failover"
    reason = reasons.FAILBACK_REFUSED if switch.failback else reasons.FAILOVER_REFUSED
    planned = _in_scope(catalog, scope, switch, word, reason)
    primary = switch.target if switch.failback else switch.source
    silent = unanswered(storage, primary)
    if silent is not None:
        how = ("spec.failover.kind Unplanned fails over without reading it" if not switch.failback
               else "a failback writes there: it waits until the primary answers")
        raise SwitchRefused(reason, f"planned {word} to {switch.target.name} refused, nothing was changed: the "
                                    f"primary {primary.name} does not answer ({silent}); {how}")
    units: Sequence[Unit] = planned.plan.units
    if switch.failback:  # the copies (with their manifests) are on the source; the originals on the target
        units = [Unit(u.id, u.target, u.source) for u in units]
    checks = check_units(units, storage, verify, owner=owner)
    held: list[str] = []
    back: set[str] = set()  # diverged units whose original wins: pointed back at it, as units in sync are
    if switch.failback:
        changed = [c for c in checks if c.state in CHANGED]
        missing = [f"{c.unit.id}: {c.reason}" for c in checks if c.state != IN_SYNC and c.state not in CHANGED]
        split = {c.unit.id: diverged(c.unit.source, c.unit.target, storage) for c in changed}  # original, copy
        if diverged_winner == PRIMARY_WINS:
            back = {uid for uid, why in split.items() if why}
        elif diverged_winner != SECONDARY_WINS:
            held = [f"{uid}: {why}" for uid, why in split.items() if why]
        changed = [c for c in changed if not split[c.unit.id] or diverged_winner == SECONDARY_WINS]
    else:
        changed, missing = [], [f"{c.unit.id}: {c.reason}" for c in checks if not c.in_sync]
    if missing:
        where = ("cannot be compared with their originals" if switch.failback
                 else f"not whole and current on {switch.target.name}")
        raise SwitchRefused(reason, f"{word} to {switch.target.name} refused, nothing was changed: {len(missing)} "
                                    f"of {len(checks)} units {where}: {_first(missing)}")
    moved = []
    for check in changed:
        ref = planned.refs[check.unit.id]
        home = failback_home(ref.location, switch)
        if home is None:
            raise SwitchRefused(reason, f"{word}: no new directory on {switch.target.name} can be named for "
                                        f"{check.unit.id} at {ref.location}")
        moved.append(Moved(Unit(check.unit.id, check.unit.target, parse_uri(home, f"unit {check.unit.id!r}: "
                                                                                  "target")), ref.location))
    check_overlaps([m.unit for m in moved])
    moving = {m.unit.id for m in moved} | {h.partition(": ")[0] for h in held}
    verified = _verified(catalog, scope, planned, set(planned.refs) - moving)
    relist = units_relist([c.unit for c in checks if c.state == IN_SYNC], storage, verify, owner)
    return SwitchPlan(len(checks) - len(held), tuple(moved), verified, relist, diverged=tuple(held),
                      originals_won=tuple(sorted(back)))


def check_unplanned(catalog: Catalog, scope: ReplicaScope, switch: Switch, storage: Storage, verify: str, *,
                    owner: Owner | None, leave_behind: bool) -> SwitchPlan:
    """An unplanned failover's gate, which never reads the source cluster: each unit's copy on the target must
    be the one the catalog recorded (its manifest's fingerprint is `hivecat.replica.<target>.checksum`, kept
    for a stale unit while its last copy is intact) and whole (every file the manifest lists, with its size;
    with verify checksum, the contents). Units without such a copy refuse the failover, or with `leave_behind`
    stay where they are (SwitchPlan.behind names them)."""
    planned = _in_scope(catalog, scope, switch, "failover", reasons.FAILOVER_REFUSED)
    copies, behind = [], []
    for unit in planned.plan.units:
        recorded = planned.refs[unit.id].parameters.get(replica_key(switch.target.name, "checksum"))
        if recorded:
            copies.append(RecordedCopy(unit.id, unit.target, recorded))
        else:
            behind.append(f"{unit.id}: no verified copy on {switch.target.name} is recorded")
    checks = check_copies(copies, storage, verify, owner=owner)
    behind += [f"{c.copy.unit_id}: {c.reason}" for c in checks if not c.whole]
    if behind and not leave_behind:
        raise SwitchRefused(reasons.FAILOVER_REFUSED, (
            f"unplanned failover to {switch.target.name} refused, nothing was changed: {len(behind)} of "
            f"{len(planned.plan.units)} units have no whole recorded copy there: {_first(behind)}; "
            "spec.failover.leaveBehind lets them keep pointing at the primary"))
    whole = [c.copy for c in checks if c.whole]
    verified = _verified(catalog, scope, planned, {c.unit_id for c in whole})
    return SwitchPlan(len(whole), (), verified, copies_relist(whole, storage, verify, owner), tuple(behind))


_GENERATION = re.compile(r"g([0-9]{1,9})")
_MARK = "file:///hivecat-below"


def failback_home(location: str, switch: Switch) -> str | None:
    """The new directory on the primary for a unit changed while failed over: its path on the current cluster
    below `<primary>/.hivecat/failback/<namespace>/<replica>/g<N>`, where N is one more than the generation the
    unit came from (a unit that was itself failed back once lives below g1 and goes to g2), so no directory a
    unit pointed at before is ever the target of a copy."""
    base = f"{FAILBACK_DIR}/{switch.home}"
    for prefix in (switch.source.filesystem, *switch.source.aliases):
        below = rebase(location, prefix, _MARK)  # the path below the prefix, however the catalog spells it
        if below is None:
            continue
        rest, generation = below[len(_MARK):], 0
        head = f"/{base}/"
        if rest.startswith(head):
            name, _, tail = rest[len(head):].partition("/")
            if _GENERATION.fullmatch(name):
                generation, rest = int(name[1:]), "/" + tail if tail else ""
        return f"{switch.target.filesystem.rstrip('/')}/{base}/g{generation + 1}{rest}"
    return None


class Recheck:
    """The second listing of a switch, asked by the location engine after its writes and before they commit:
    names the units no longer what was verified (a file appended, removed or rewritten since the check) and
    remembers them in `changed`, so the switch is written again without them."""

    def __init__(self) -> None:
        self.changed: dict[str, str] = {}  # unit id -> why

    def __call__(self, relist: Relist, ids: Collection[str]) -> list[str]:
        found = relist(ids)
        self.changed.update(found)
        return [f"{uid}: {why}" for uid, why in found.items()]


def relocate_changed(catalog: Catalog, scope: ReplicaScope, moved: Sequence[Moved], recheck: Recheck,
                     relist: Relist) -> list[RelocationReport]:
    """Each changed unit's location to its new directory, one journaled run per unit (anchored: nothing else of
    the table is under a unit's own directory), compare-and-set against the location it was copied from, and
    its new copy listed again before the run commits."""
    reports = []
    for unit in moved:
        request = RelocationRequest(unit.location, unit.unit.target.uri, Scope(scope.database, scope.table),
                                    allow_scheme_change=True, expected_locations=(unit.location,))
        try:
            reports.append(catalog.relocate(request, confirm=lambda uid=unit.unit.id: recheck(relist, [uid])))
        except RelocationRefused as refused:
            raise SwitchRefused(reasons.RELOCATION_REFUSED, str(refused)) from None
    return reports


def switch_locations(catalog: Catalog, scope: ReplicaScope, switch: Switch, plan: SwitchPlan,
                     recheck: Recheck) -> list[RelocationReport]:
    """Relocate the verified locations of the table from each of the source cluster's prefixes to the target's
    filesystem (journaled). A unit the second listing finds changed is left out and the run written again
    (`recheck.changed` names it)."""
    reports = []
    for prefix in (switch.source.filesystem, *switch.source.aliases):
        while True:
            moving = {uid: location for uid, location in plan.verified.items() if uid not in recheck.changed}
            ids = [uid for uid in moving if uid != TABLE_ROOT]
            request = RelocationRequest(prefix, switch.target.filesystem, Scope(scope.database, scope.table),
                                        allow_scheme_change=True, expected_locations=tuple(sorted(set(moving.values()))))
            try:
                dry = catalog.relocate(RelocationRequest(**{**request.__dict__, "dry_run": True}))
                if dry.rewritten:
                    relist = plan.relist
                    confirm = None if relist is None else (lambda ids=ids: recheck(relist, ids))
                    reports.append(catalog.relocate(request, confirm=confirm))
                break
            except RelocationRefused as refused:
                changed_now = [r for r in refused.refusals if r.reason == CHANGED_AFTER_CHECK]
                if not changed_now or not set(moving) & set(recheck.changed):
                    raise SwitchRefused(reasons.RELOCATION_REFUSED, str(refused)) from None
    return reports


def left_behind(catalog: Catalog, scope: ReplicaScope, switch: Switch) -> list[str]:
    """Units of the table still under the switch's source cluster after it: added or changed after the check."""
    return list(plan_replica(catalog, ReplicaScope(scope.database, scope.table), switch.source,
                             switch.target).unit_ids)


def _first(items: Sequence[str]) -> str:
    more = f" (and {len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return "; ".join(items[:SHOWN]) + more
