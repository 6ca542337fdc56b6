"""The copy engine at the size of real tables: `hivecat distcp --plan` over 1,000, 10,000 and 100,000 units.

Each unit is one partition directory of one table, as a TableReplica's plan has them: either one small file
(1 KiB, shape `files`) or empty (shape `empty`). For each size and shape the source tree and a plan are
written once, then the real command a copy Job runs (`hivecat distcp --plan P --output json`, its own
process) copies every unit for the first time into a fresh target and is run again with nothing changed;
local -> local, and local -> moto S3 (its own moto server, fresh bucket per copy). Every run's JSON summary
is checked before its time counts (succeeded, every unit done on the first copy, nothing copied on the rerun).

Figures per target, shape and size: seconds, microseconds per unit (flat across sizes means linear in the
number of units), the process's peak RSS (its own, from wait4), for local -> local how long until the first
unit was committed (`*_first_unit_committed_s`: its manifest appeared; units are copied a window at a time),
for S3 the requests per unit the server
answered (`*_requests_per_unit`, from its log), and for local -> local `cp -r` of the same
source tree, timed the same way (`*_vs_cp`: cp seconds / hivecat seconds, higher is better). `*_growth` is
the per-unit time at the largest size over the smallest: 1.0 is linear.

    python benchmarks/distcp_scale.py            # 1k, 10k, 100k units; local and S3: about 25 minutes on 2 CPUs
    python benchmarks/distcp_scale.py --sizes 1000,10000 --no-s3
    python benchmarks/distcp_scale.py --small    # 10 and 40 units: checks that everything works

Speed is never asserted. The last stdout line is one JSON object of figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.local.moto import moto_server

FULL, SMALL = (1_000, 10_000, 100_000), (10, 40)
SHAPES = ("files", "empty")
FILE_BYTES = 1024
S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def label(count: int) -> str:
    return f"{count // 1000}k" if count >= 1000 else str(count)


def write_table(root: Path, units: int, with_files: bool) -> Path:
    """`units` partition directories under root/src (one 1 KiB file each, or none)."""
    source = root / "src"
    payload = os.urandom(FILE_BYTES)
    for index in range(units):
        partition = source / f"dt={index:07d}"
        partition.mkdir(parents=True)
        if with_files:
            (partition / "part-00000.orc").write_bytes(payload)
    return source


def write_plan(path: Path, source: Path, target_uri: str, units: int) -> None:
    document = {"version": 1, "units": [{"id": f"dt={i:07d}", "source": f"file://{source}/dt={i:07d}",
                                         "target": f"{target_uri}/dt={i:07d}"} for i in range(units)]}
    path.write_text(json.dumps(document))


def timed(command: list[str], env: dict[str, str] | None = None,
          watch: Path | None = None) -> tuple[float, float, str, float | None]:
    """(seconds, peak RSS in MiB, stdout, seconds until `watch` appeared or None) of one process, which must
    succeed; reaped with wait4 for its own resource usage (the output goes through files, so no reader thread
    holds it up). `watch` is looked for every 20 ms while the process runs."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        began = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env, text=True)
        appeared: list[float] = []
        done = threading.Event()

        def look() -> None:
            while not done.wait(0.02):
                if watch is not None and watch.exists():
                    appeared.append(time.perf_counter() - began)
                    return

        watcher = threading.Thread(target=look, daemon=True)
        watcher.start()
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - began
        done.set()
        watcher.join()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0), err.seek(0)
        if process.returncode != 0:
            raise AssertionError(f"{' '.join(command[:3])} ... exited {process.returncode}: {err.read()[-2000:]}")
        return seconds, usage.ru_maxrss / 1024, out.read(), appeared[0] if appeared else None


def check(summary_text: str, units: int, copied: int) -> None:
    summary = json.loads(summary_text)
    totals = summary["totals"]
    done = totals["units_done"] + totals["units_skipped"]
    if summary["status"] != "succeeded" or done != units or totals["files_copied"] != copied:
        raise AssertionError(f"the run did not do what it should: {summary['status']} {totals}")


def fresh(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    os.sync()


@contextmanager
def s3_target(workdir: Path, enabled: bool) -> Iterator[dict[str, str] | None]:
    if not enabled:
        yield None
        return
    with moto_server(workdir / "moto.log") as endpoint:
        yield {**os.environ, **S3_ENV, "AWS_ENDPOINT_URL": endpoint}


def requests_logged(workdir: Path) -> int:
    """How many requests the moto server has answered so far (a line each in its log)."""
    with open(workdir / "moto.log", "rb") as log:
        return sum(1 for line in log if b" HTTP/1.1" in line)


def new_bucket(env: dict[str, str], name: str) -> None:
    import boto3
    boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1",
                 aws_access_key_id="testing", aws_secret_access_key="testing").create_bucket(Bucket=name)


def measure(hivecat: str, workdir: Path, units: int, shape: str, s3: dict[str, str] | None) -> dict[str, float]:
    figures: dict[str, float] = {}
    root = workdir / f"{shape}-{units}"
    source = write_table(root, units, shape == "files")
    copied = units if shape == "files" else 0
    targets = [("local", f"file://{root}/dst", None)]
    if s3 is not None:
        targets.append(("s3", f"s3://b-{shape}-{units}/table", s3))
    for kind, target_uri, env in targets:
        plan = root / f"plan-{kind}.json"
        write_plan(plan, source, target_uri, units)
        if env is not None:
            new_bucket(env, target_uri.split("/")[2])
        else:
            fresh(root / "dst")
        key = f"{kind}_{shape}_{label(units)}"
        command = [hivecat, "distcp", "--plan", str(plan), "--output", "json"]
        for run, files in (("first", copied), ("rerun", 0)):
            logged = requests_logged(workdir) if env is not None else 0
            first_unit = root / "dst" / "dt=0000000" / MANIFEST_NAME if env is None and run == "first" else None
            seconds, rss, out, committed = timed(command, env, first_unit)
            check(out, units, files)
            figures.update({f"{key}_{run}_s": seconds, f"{key}_{run}_us_per_unit": seconds / units * 1e6,
                            f"{key}_{run}_peak_rss_mib": rss})
            if first_unit is not None:  # when readers can see the first unit: copying began before it
                figures[f"{key}_first_unit_committed_s"] = committed if committed is not None else seconds
            if env is not None:
                figures[f"{key}_{run}_requests_per_unit"] = (requests_logged(workdir) - logged) / units
        if kind == "local":
            if not (root / "dst" / "dt=0000000" / MANIFEST_NAME).is_file():
                raise AssertionError("no manifest in the first unit's target")
            fresh(root / "cp")
            cp_seconds, _, _, _ = timed(["cp", "-r", str(source), str(root / "cp")])
            figures[f"{key}_cp_s"] = cp_seconds
            figures[f"{key}_first_vs_cp"] = cp_seconds / figures[f"{key}_first_s"]
        log(f"  {key}: first {figures[f'{key}_first_s']:.2f} s ({figures[f'{key}_first_us_per_unit']:.0f} us/unit, "
            f"{figures[f'{key}_first_peak_rss_mib']:.0f} MiB"
            + (f", first unit committed at {figures[f'{key}_first_unit_committed_s']:.2f} s" if kind == "local" else "")
            + f"), rerun {figures[f'{key}_rerun_s']:.2f} s "
            f"({figures[f'{key}_rerun_us_per_unit']:.0f} us/unit)"
            + (f", cp -r {figures[f'{key}_cp_s']:.2f} s" if kind == "local" else
               f", S3 requests per unit {figures[f'{key}_first_requests_per_unit']:.1f} first, "
               f"{figures[f'{key}_rerun_requests_per_unit']:.1f} rerun"))
    shutil.rmtree(root, ignore_errors=True)
    return figures


def growth(figures: dict[str, float], sizes: tuple[int, ...]) -> None:
    smallest, largest = label(min(sizes)), label(max(sizes))
    for key in [k for k in figures if f"_{smallest}_" in k and k.endswith("_us_per_unit")]:
        head, tail = key.split(f"_{smallest}_")
        other = f"{head}_{largest}_{tail}"
        if other in figures and smallest != largest:
            figures[f"{head}_{tail.removesuffix('_us_per_unit')}_growth"] = figures[other] / figures[key]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="10 and 40 units: checks that everything works")
    parser.add_argument("--sizes", help="comma-separated unit counts (default 1000,10000,100000)")
    parser.add_argument("--no-s3", action="store_true", help="local -> local only")
    parser.add_argument("--workdir", type=Path, help="where to write the trees (default: a temp dir under /tmp)")
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else SMALL if args.small else FULL
    hivecat = shutil.which("hivecat", path=str(Path(sys.executable).parent)) or "hivecat"
    workdir = Path(tempfile.mkdtemp(prefix="hivecat-bench-scale-", dir=args.workdir))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run still removes its trees (finally)
    figures: dict = {"cpus": os.cpu_count() or 0, "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
                     "sizes": ",".join(map(str, sizes)), "file_bytes": FILE_BYTES}
    try:
        with s3_target(workdir, not args.no_s3) as s3:
            for units in sizes:
                for shape in SHAPES:
                    figures.update(measure(hivecat, workdir, units, shape, s3))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    growth(figures, sizes)
    figures["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    figures = {k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}
    for key in sorted(k for k in figures if k.endswith("_growth")):
        print(f"{key.removesuffix('_growth')}: per-unit time at {label(max(sizes))} / at {label(min(sizes))} "
              f"units = {figures[key]:.2f}")
    print(f"{figures['cpus']} CPUs, 1-min load average {figures['load_avg_1m_at_start']} at start, "
          f"{figures['load_avg_1m_at_end']} at the end")
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
