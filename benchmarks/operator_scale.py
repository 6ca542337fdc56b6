"""The operator at scale: N HiveCatalogs, ClusterStorages and TableReplicas on the real control plane, taken up by
the real `hivecat run` process; how long until each is Ready, how long one spec change takes under that load (and
while copy Jobs sit Pending), the event loop's worst lag, the operator's peak memory and its API requests in the
steady state.

Per N (100 and 1,000; --small: 30), on a fresh control plane of the test harness (tests/kube: etcd,
kube-apiserver auditing every ServiceAccount request, controller-manager, scheduler, a kwok node) and a fresh moto
(Glue and S3): T = 2% of N team namespaces, each with a CatalogPolicy grant and a Secret; 2% HiveCatalogs in Glue
mode, 20% ClusterStorages (s3:// on moto), the rest TableReplicas of empty partitioned Glue tables (a sync has
nothing to copy); see operator_scale_support/scenario.py. All are created with the operator stopped; then the
operator starts (cluster-wide, as the chart's ServiceAccount and arguments) and the benchmark, watching each kind:

1. times each resource from the operator's start to its first Ready=True (p50, p99, all; a cap per N, after
   which it reports how many were Ready and why the others were not);
2. makes spec changes one after another (ClusterStorage spec.scanInterval, TableReplica spec.schedule.interval,
   alternately), each from its PATCH until status.observedGeneration shows the new generation (and, apart, until
   the Ready condition's observedGeneration does: for a TableReplica, that is its sync of the new spec);
3. reads the worst event-loop lag from /metrics (hivecat_event_loop_lag_max_seconds) and the operator's peak RSS
   (VmHWM);
4. counts the operator's API requests in a quiet window from the audit log: per second, and lists and watches per
   kind;
5. adds TableReplicas whose copies run as Kubernetes Jobs that can never be scheduled (1000 CPUs), waits until
   their Jobs exist and their pods are Pending (or no new one came for a minute: reported), and makes the same
   changes again.

    python benchmarks/operator_scale.py             # N = 100 and 1,000: about 30 minutes on 2 CPUs
    python benchmarks/operator_scale.py --sizes 100 # N = 100 only
    python benchmarks/operator_scale.py --small     # N = 30, fewer changes: 1 to 1.5 minutes

The operator process imports this checkout's operator/ (PYTHONPATH, ahead of whatever the venv installed), or the
other build that HIVECAT_TEST_OPERATOR_PYTHONPATH names, as in the tests; `operator_fingerprint` digests those
sources.

Speed is never asserted: every figure is reported, also when resources never became Ready. Every process it starts
(control plane, moto, operator) is stopped at the end, also on failure, ^C or SIGTERM. The last stdout line is one
JSON object of figures; `--log-dir` keeps the operator's logs (default: a new directory under /tmp, printed).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the test harness: kube/, support/
sys.path.insert(0, str(HERE.parent / "operator"))  # this checkout's hivecat, whatever the venv installed
sys.path.insert(0, str(HERE))

import boto3  # noqa: E402

from operator_scale_support.audit import AuditWindow, Window  # noqa: E402
from operator_scale_support.changes import change_figures, change_targets, make_changes  # noqa: E402
from operator_scale_support.env import OPERATOR_USER_PREFIX, Bench, new_workdir, operator_source  # noqa: E402
from operator_scale_support.figures import percentile, ratio, rounded  # noqa: E402
from operator_scale_support.report import log_problems, print_table  # noqa: E402
from operator_scale_support.scenario import (Layout, namespaces_and_grants, pending_resources, replicas,  # noqa: E402
                                             resources, secrets, seed)
from operator_scale_support.watch import Key, Watcher  # noqa: E402
from support.scrape import sample, scrape  # noqa: E402

PLURALS = ("hivecatalogs", "clusterstorages", "tablereplicas")
ALLOWED_IMAGES = "registry.example.com/hivecat:*"
JOBS_STALL = 60.0  # seconds without a new copy Job before the pending phase stops waiting for more


@dataclass(frozen=True)
class Sizes:
    ns: tuple[int, ...]
    ready_cap: dict[int, float]   # seconds from the operator's start
    changes: int                  # per phase (idle, with Jobs pending)
    change_timeout: float         # seconds for one change's status.observedGeneration
    ready_gen_wait: float         # after a phase, seconds more for the Ready conditions' observedGeneration
    quiet: float                  # the steady-state window
    pending: int                  # copy Jobs that can never be scheduled
    pending_wait: float           # seconds for their Jobs and Pending pods


FULL = Sizes((100, 1000), {100: 300.0, 1000: 900.0}, 50, 60.0, 60.0, 30.0, 20, 180.0)
SMALL = Sizes((30,), {30: 90.0}, 10, 30.0, 20.0, 10.0, 4, 45.0)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- 1. until Ready --------------------------------------------------------------------------------------------

def resource_keys(layout: Layout) -> set[Key]:
    keys: set[Key] = set()
    for i in range(layout.namespaces):
        ns = layout.namespace(i)
        keys.add(("hivecatalogs", ns, "lake"))
        keys |= {("clusterstorages", ns, f"c{j:02d}") for j in range(layout.storages_in(i))}
    keys |= {("tablereplicas", r.namespace, r.name) for r in replicas(layout)}
    return keys


def wait_ready(bench: Bench, watcher: Watcher, keys: set[Key], began: float, cap: float) -> float:
    """Until every key was Ready once, the cap, or the operator's exit; progress on stderr. Seconds waited."""
    deadline = began + cap
    last = -1
    while time.monotonic() < deadline:
        done = watcher.wait(lambda: keys <= watcher.first_ready.keys(), min(15.0, deadline - time.monotonic()))
        count = watcher.ready_count(keys)
        if count != last:
            log(f"  {count}/{len(keys)} Ready after {time.monotonic() - began:.0f} s")
            last = count
        if done or not bench.operator_alive():
            break
    return time.monotonic() - began


def ready_figures(watcher: Watcher, keys: set[Key], began: float, cap: float) -> dict[str, Any]:
    """Percentiles over all N: a resource never Ready counts as later than any that was (so a p99 that falls
    among them is reported as -1, i.e. beyond the cap)."""
    with watcher.cond:
        times = {k: watcher.first_ready[k] - began for k in keys if k in watcher.first_ready}
    never = len(keys) - len(times)
    ordered = sorted(times.values()) + [math.inf] * never
    out: dict[str, Any] = {"resources": len(keys), "ready_count": len(times), "ready_cap_s": cap,
                           "ready_p50_s": rounded(percentile(ordered, 50)),
                           "ready_p99_s": rounded(percentile(ordered, 99)),
                           "all_ready_s": rounded(max(times.values())) if never == 0 and times else -1.0}
    for plural in PLURALS:
        kind = plural[:-1]
        mine = [t for k, t in times.items() if k[0] == plural] + [math.inf] * sum(
            1 for k in keys if k[0] == plural and k not in times)
        out[f"{kind}_ready_p50_s"] = rounded(percentile(mine, 50))
        out[f"{kind}_ready_max_s"] = rounded(max(mine)) if mine else -1.0
    return out


def why_not_ready(watcher: Watcher, keys: set[Key]) -> Counter:
    """(kind, Ready status/reason or 'no Ready condition', phase) -> count, for those never Ready."""
    found: Counter = Counter()
    for key, status in watcher.not_ready(keys).items():
        ready = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
        what = f"Ready={ready.get('status')} {ready.get('reason')}" if ready else "no Ready condition"
        found[(key[0], what, status.get("phase") or "-")] += 1
    return found


def sample_messages(watcher: Watcher, keys: set[Key], limit: int = 3) -> list[str]:
    out = []
    for key, status in sorted(watcher.not_ready(keys).items()):
        ready = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
        if ready and ready.get("message"):
            out.append(f"{key[0]} {key[1]}/{key[2]}: {ready.get('reason')}: {ready['message'][:300]}")
        if len(out) >= limit:
            break
    return out


# --- 5. copy Jobs that stay Pending -----------------------------------------------------------------------------

def copy_jobs(bench: Bench, namespaces: list[str]) -> tuple[int, int]:
    """(hivecat's copy Jobs, their pods that are Pending) in these namespaces."""
    api = bench.api()
    jobs = pending = 0
    for ns in namespaces:
        jobs += len(api.get(f"/apis/batch/v1/namespaces/{ns}/jobs",
                            labelSelector="app.kubernetes.io/managed-by=hivecat")["items"])
        pods = api.get(f"/api/v1/namespaces/{ns}/pods", labelSelector="batch.kubernetes.io/job-name")["items"]
        pending += sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Pending")
    return jobs, pending


def wait_for_jobs(bench: Bench, namespaces: list[str], want: int, wait: float,
                  stall: float = JOBS_STALL) -> tuple[int, int, float]:
    """Until `want` copy Jobs exist with their pods Pending, `wait` seconds, or `stall` seconds without a new
    Job or Pending pod (the operator makes no more: e.g. its syncs all wait on the Jobs already there).
    (Jobs, Pending pods, seconds waited)."""
    began = changed = time.monotonic()
    seen = (0, 0)
    while time.monotonic() - began < wait and bench.operator_alive():
        now = copy_jobs(bench, namespaces)
        if now != seen:
            seen, changed = now, time.monotonic()
        if min(now) >= want or time.monotonic() - changed > stall:
            break
        time.sleep(1)
    return seen[0], seen[1], time.monotonic() - began


# --- the operator's own figures -----------------------------------------------------------------------------------

def operator_fingerprint() -> str:
    """A digest of the sources the operator process imports, when it starts (they may change between runs)."""
    digest = hashlib.sha256()
    root = operator_source()
    for path in sorted((root / "hivecat").rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def run_figures(bench: Bench, f: dict[str, Any]) -> None:
    """Passes per kind from hivecat_run_duration_seconds: how many, and their mean seconds."""
    try:
        samples = scrape(bench.metrics_port)
    except OSError:
        return
    for kind, run, name in (("TableReplica", "sync", "sync"), ("ClusterStorage", "drift-scan", "scan"),
                            ("HiveCatalog", "check", "catalog_check")):
        count = sample(samples, "hivecat_run_duration_seconds_count", kind=kind, run=run) or 0.0
        total = sample(samples, "hivecat_run_duration_seconds_sum", kind=kind, run=run) or 0.0
        f[f"{name}_passes"] = int(count)
        f[f"{name}_mean_s"] = round(total / count, 3) if count else -1.0


def loop_lag_max(bench: Bench) -> float:
    try:
        found = sample(scrape(bench.metrics_port), "hivecat_event_loop_lag_max_seconds")
    except OSError:
        return -1.0
    return -1.0 if found is None else float(found)


def loop_lag_over(bench: Bench, limit: str = "0.1") -> float:
    """The share of the loop's beats (every 0.25 s) that came later than `limit` seconds (a bucket bound of
    hivecat_event_loop_lag_seconds): how often, where loop_lag_max says how bad the worst was."""
    try:
        samples = scrape(bench.metrics_port)
    except OSError:
        return -1.0
    within = sample(samples, "hivecat_event_loop_lag_seconds_bucket", le=limit)
    count = sample(samples, "hivecat_event_loop_lag_seconds_count")
    return -1.0 if within is None or not count else round(1 - within / count, 4)


# --- one N --------------------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    n: int
    figures: dict[str, Any] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)  # human-readable notes for the report


def run_scenario(n: int, sizes: Sizes, log_dir: Path) -> Outcome:
    layout = Layout.of(n)
    out = Outcome(n)
    f = out.figures
    scenario_began = time.monotonic()
    workdir = new_workdir()
    log(f"N={n}: {layout.namespaces} namespaces, {layout.catalogs} HiveCatalogs, {layout.storages} ClusterStorages, "
        f"{layout.replicas} TableReplicas (work directory {workdir})")
    with Bench(workdir) as bench:
        log(f"  control plane up in {bench.plane.start_seconds:.1f} s, moto at {bench.moto_endpoint}")
        clients = {name: boto3.client(name, endpoint_url=bench.moto_endpoint, region_name=bench.region,
                                      aws_access_key_id="testing", aws_secret_access_key="testing")
                   for name in ("glue", "s3")}
        setup_began = time.monotonic()
        seed(layout, clients["glue"], clients["s3"])
        bench.create_all(namespaces_and_grants(layout, bench.moto_endpoint, bench.region), threads=4)
        bench.create_all(secrets(layout))
        created = bench.create_all(resources(layout, bench.moto_endpoint, bench.region))
        keys = resource_keys(layout)
        assert created == len(keys) == n, (created, len(keys), n)
        f["setup_s"] = round(time.monotonic() - setup_began, 1)
        log(f"  {created} resources and their Glue tables made in {f['setup_s']} s; starting the operator")

        watcher = Watcher(bench.url, bench.session, PLURALS)
        watcher.start()
        operator_log = workdir / "operator.log"
        try:
            f["operator_fingerprint"] = operator_fingerprint()
            began = time.monotonic()
            bench.start_operator(operator_log, {"HIVECAT_ALLOWED_IMAGES": ALLOWED_IMAGES})
            cap = sizes.ready_cap.get(n, max(sizes.ready_cap.values()))
            waited = wait_ready(bench, watcher, keys, began, cap)
            f.update(ready_figures(watcher, keys, began, cap))
            f["ready_waited_s"] = round(waited, 1)
            f["rss_at_ready_mb"] = round(bench.operator_rss_mb(), 1) if bench.operator_alive() else -1.0
            f["loop_lag_max_at_ready_s"] = rounded(loop_lag_max(bench))
            f["loop_lag_over_100ms_share_at_ready"] = loop_lag_over(bench)
            f["cpu_at_ready_s"] = round(bench.operator_cpu_seconds(), 1) if bench.operator_alive() else -1.0
            reasons = why_not_ready(watcher, keys)
            for (plural, what, phase), count in reasons.most_common(8):
                out.lines.append(f"never Ready within {cap:.0f} s: {count} {plural} ({what}, phase {phase})")
            out.lines += [f"  e.g. {m}" for m in sample_messages(watcher, keys)]
            log(f"  Ready: {f['ready_count']}/{n}, p50 {f['ready_p50_s']} s, p99 {f['ready_p99_s']} s, "
                f"all {f['all_ready_s']} s")

            # 2. changes, no Jobs pending
            if bench.operator_alive():
                log(f"  {sizes.changes} spec changes, one after another")
                idle = make_changes(bench, watcher, change_targets(layout, sizes.changes, 0), sizes.change_timeout,
                                    sizes.ready_gen_wait, phase_cap=sizes.changes * sizes.change_timeout)
                f.update(change_figures(idle, "change"))
                log(f"  change p50 {f['change_p50_s']} s, p99 {f['change_p99_s']} s (Ready's generation: p50 "
                    f"{f['change_ready_p50_s']} s, p99 {f['change_ready_p99_s']} s)")

            # 4. the steady state
            if bench.operator_alive():
                time.sleep(3)
                window = AuditWindow(bench.audit_log, OPERATOR_USER_PREFIX)
                window.begin()
                log(f"  quiet window of {sizes.quiet:.0f} s (audit log)")
                time.sleep(sizes.quiet)
                steady = window.end()
                steady_figures(f, "steady", steady)
                out.lines.append(f"steady state, {steady.seconds:.0f} s: " + steady.top_text())

            # 5. copy Jobs that stay Pending, then the same changes again
            if bench.operator_alive():
                objects, pending = pending_resources(layout, sizes.pending, clients["glue"], clients["s3"])
                bench.create_all(objects)
                namespaces = sorted({ns for ns, _ in pending})
                log(f"  {len(pending)} TableReplicas whose copy Jobs cannot be scheduled; waiting for their Jobs")
                jobs, pods, waited = wait_for_jobs(bench, namespaces, len(pending), sizes.pending_wait)
                f["pending_jobs"], f["pending_pods"], f["pending_wait_s"] = jobs, pods, round(waited, 1)
                log(f"  {jobs} copy Jobs, {pods} pods Pending after {f['pending_wait_s']} s")
                if jobs < len(pending):
                    out.lines.append(f"only {jobs} of {len(pending)} copy Jobs existed after {waited:.0f} s "
                                     f"({pods} pods Pending)")
                time.sleep(3)
                window = AuditWindow(bench.audit_log, OPERATOR_USER_PREFIX)
                window.begin()
                time.sleep(sizes.quiet)
                busy = window.end()
                steady_figures(f, "pending", busy)
                out.lines.append(f"with the Jobs pending, {busy.seconds:.0f} s: " + busy.top_text())
                log(f"  {sizes.changes} spec changes with the Jobs pending")
                loaded = make_changes(bench, watcher, change_targets(layout, sizes.changes, 1), sizes.change_timeout,
                                      sizes.ready_gen_wait, phase_cap=sizes.changes * sizes.change_timeout)
                f.update(change_figures(loaded, "change_pending"))
                f["change_pending_over_idle"] = ratio(f["change_pending_p99_s"], f.get("change_p99_s", -1.0))
                f["change_pending_over_idle_p50"] = ratio(f["change_pending_p50_s"], f.get("change_p50_s", -1.0))
                f["pending_jobs_at_end"], f["pending_pods_at_end"] = copy_jobs(bench, namespaces)
                log(f"  change with Jobs pending p50 {f['change_pending_p50_s']} s, p99 {f['change_pending_p99_s']} s")

            # 3. the operator's own figures, at the end
            alive = bench.operator_alive()
            f["loop_lag_max_s"] = rounded(loop_lag_max(bench)) if alive else -1.0
            f["loop_lag_over_100ms_share"] = loop_lag_over(bench) if alive else -1.0
            f["rss_peak_mb"] = round(bench.operator_peak_rss_mb(), 1) if alive else -1.0
            f["cpu_s"] = round(bench.operator_cpu_seconds(), 1) if alive else -1.0
            f["threads_at_end"] = bench.operator_threads() if alive else -1
            run_figures(bench, f)
            f["watch_events"], f["watch_restarts"] = watcher.events, watcher.restarts
        finally:
            watcher.stop()
            before_stop = operator_log.stat().st_size if operator_log.exists() else 0
            code = bench.stop_operator()
            f["operator_exit"] = -999 if code is None else int(code)
            kept = bench.keep(operator_log, log_dir, f"operator-n{n}.log")
            raw = operator_log.read_bytes() if operator_log.exists() else b""
            text = raw[:before_stop].decode(errors="replace")  # what it logged while running, not its shutdown
            groups, first, tracebacks = log_problems(text)
            stopping, _, _ = log_problems(raw[before_stop:].decode(errors="replace"))
            f["log_shutdown_warnings"] = sum(stopping.values())
            f["log_errors"] = sum(c for g, c in groups.items() if "[ERROR" in g or "[CRITICAL" in g)
            f["log_warnings"] = sum(c for g, c in groups.items() if "[WARNING" in g)
            f["log_tracebacks"] = tracebacks
            f["log_lines"] = text.count("\n")
            for group, count in groups.most_common(10):
                out.lines.append(f"log x{count}: {first[group][:400]}")
            if kept:
                out.lines.append(f"operator log kept at {kept}")
    f["scenario_s"] = round(time.monotonic() - scenario_began, 1)
    return out


def steady_figures(f: dict[str, Any], prefix: str, window: Window) -> None:
    f[f"{prefix}_window_s"] = round(window.seconds, 1)
    f[f"{prefix}_requests"] = window.total
    f[f"{prefix}_requests_per_s"] = round(window.per_second, 2)
    f[f"{prefix}_list_watch_per_kind"] = window.list_watch_text()
    f[f"{prefix}_by_verb"] = ",".join(f"{what.replace(' ', ':')}={count}" for what, count in window.top(8))



HEADLINE = ("change_p50_s", "change_p99_s", "change_ready_p50_s", "change_ready_p99_s", "change_pending_p50_s",
            "change_pending_p99_s", "change_pending_ready_p50_s", "change_pending_ready_p99_s",
            "change_pending_over_idle", "change_pending_over_idle_p50", "loop_lag_max_s", "loop_lag_over_100ms_share",
            "rss_peak_mb", "steady_requests_per_s", "steady_list_watch_per_kind", "pending_jobs", "pending_requests_per_s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="N=30, 10 changes, 4 pending Jobs: checks the format")
    parser.add_argument("--sizes", help="comma-separated N values (default 100,1000; --small 30)")
    parser.add_argument("--cap", type=float, help="seconds from the operator's start to wait for Ready (every N)")
    parser.add_argument("--changes", type=int, help="spec changes per phase")
    parser.add_argument("--pending", type=int, help="copy Jobs that can never be scheduled")
    parser.add_argument("--quiet", type=float, help="seconds of the steady-state window")
    parser.add_argument("--log-dir", type=Path, help="where the operators' logs are kept (default: a new /tmp dir)")
    args = parser.parse_args(argv)
    sizes = SMALL if args.small else FULL
    if args.sizes:
        ns = tuple(int(x) for x in args.sizes.split(","))
        sizes = dataclasses.replace(sizes, ns=ns, ready_cap={
            n: sizes.ready_cap.get(n, max(sizes.ready_cap.values())) for n in ns})
    if args.cap:
        sizes = dataclasses.replace(sizes, ready_cap={n: args.cap for n in sizes.ns})
    for name in ("changes", "pending", "quiet"):
        if getattr(args, name) is not None:
            sizes = dataclasses.replace(sizes, **{name: getattr(args, name)})
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="hivecat-operator-scale-logs-"))

    figures: dict[str, Any] = {"cpu_count": os.cpu_count() or 0}
    load = os.getloadavg()
    figures.update(load1_start=round(load[0], 2), load5_start=round(load[1], 2), load15_start=round(load[2], 2))
    began = time.monotonic()
    outcomes = []
    for n in sizes.ns:
        outcome = run_scenario(n, sizes, log_dir)
        outcomes.append(outcome)
        figures.update({f"n{n}_{key}": value for key, value in outcome.figures.items()})
    largest = outcomes[-1]
    figures["headline_n"] = largest.n
    for key in HEADLINE:
        if key in largest.figures:
            figures[key] = largest.figures[key]
    load = os.getloadavg()
    figures.update(load1_end=round(load[0], 2), load5_end=round(load[1], 2), load15_end=round(load[2], 2))
    figures["total_s"] = round(time.monotonic() - began, 1)
    figures["log_dir"] = str(log_dir)

    print_table(outcomes)
    print(f"\nload average at start {figures['load1_start']}/{figures['load5_start']}/{figures['load15_start']}, "
          f"at end {figures['load1_end']}/{figures['load5_end']}/{figures['load15_end']} on {figures['cpu_count']} "
          f"CPUs; total {figures['total_s']} s; unprefixed keys are N={largest.n}'s")
    print(json.dumps({k: v for k, v in figures.items() if isinstance(v, (int, float, str))}))
    return 0


if __name__ == "__main__":
    # A plain kill runs the clean-up too: the `with` blocks stop the operator, moto and the control plane.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    sys.exit(main())
