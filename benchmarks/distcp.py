"""Copy speed: `hivecat distcp` (local and spark engines, --verify size and checksum) vs `cp -r` and a
plain Python thread pool, local -> local; and a no-change rerun vs a plain recursive listing.

One run writes the data once (2,000 x 256 KiB files, 4 x 256 MiB files, and a 20,000-file tree for the
rerun), reads it once so the page cache is warm, then times each contender copying each shape into a
fresh target, median of 3, contenders interleaved round by round so a busy machine slows them alike.
The previous target is deleted and dirty pages are flushed (sync) outside the timed region. Every
copy is checked before its time counts: same files with the same sizes, a sample byte-equal, and
for hivecat a succeeded run summary and a manifest listing every file.

hivecat runs in-process through the function the CLI calls (`Copier.run`), so the Spark session is
created once and timed on its own (`spark_start_s`). The CLI's own wall time on the small shape is
measured once (`small_cli_s`, with `cli_startup_s` for `hivecat --help`): interpreter and import
overhead.

Targets (issue 4): local engine, --verify size >= 1.0x `cp -r` throughput on both shapes, --verify
checksum >= 0.7x; spark engine, --verify size >= 0.8x `cp -r` excluding session start; the no-change
rerun <= 2x the plain listing (os.scandir + stat of both trees). Ratios are throughput relative to
`cp -r` (cp seconds / contender seconds): higher is better.

    python benchmarks/distcp.py            # full size; about 5-10 minutes on 2 shared CPUs
    python benchmarks/distcp.py --small    # seconds; checks that everything works
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import hivecat.copy as copy_engine
from hivecat.copy import Copier, CopyOptions, LocalEngine, SparkEngine, single_unit_plan
from hivecat.copy.engines import default_session
from hivecat.copy.listing import STAGING_PREFIX
from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.copy.transfer import run_task

KIB, MIB = 1024, 1024 * 1024
WRITE_CHUNK = 4 * MIB


@dataclass(frozen=True)
class Sizes:
    small_files: int
    small_file_bytes: int
    large_files: int
    large_file_bytes: int
    noop_files: int
    repeat: int


FULL = Sizes(2000, 256 * KIB, 4, 256 * MIB, 20_000, 3)
SMALL = Sizes(200, 16 * KIB, 2, 4 * MIB, 500, 1)

# (contender, target): its throughput relative to cp -r (cp seconds / its seconds), higher is better
COPY_TARGETS = (("local", 1.0), ("local_checksum", 0.7), ("spark", 0.8))
NOOP_TARGET = 2.0  # rerun seconds / listing seconds, lower is better


def parse_args(argv: list[str] | None = None) -> tuple[Sizes, Path | None, bool]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="a quick run at small sizes, one repetition")
    parser.add_argument("--workdir", type=Path, help="where to write the data (default: a temp dir under /tmp)")
    parser.add_argument("--repeat", type=int, help="repetitions per contender (median reported)")
    parser.add_argument("--profile", action="store_true",
                        help="then print (to stderr) cProfile's top functions for one copy of each shape in each "
                             "mode, file tasks run serially so the profiler sees them, and one no-change rerun")
    args = parser.parse_args(argv)
    sizes = SMALL if args.small else FULL
    if args.repeat is not None:
        if args.repeat < 1:
            parser.error("--repeat must be at least 1")
        sizes = Sizes(**{**sizes.__dict__, "repeat": args.repeat})
    return sizes, args.workdir, args.profile


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- data ----------------------------------------------------------------------------------------------


def write_files(root: Path, count: int, size: int, per_directory: int | None = None) -> Path:
    """`count` files of `size` random bytes (each different), optionally spread over subdirectories."""
    for index in range(count):
        directory = root / f"d{index // per_directory:03d}" if per_directory else root
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / f"part-{index:05d}.orc", "wb") as out:
            left = size
            while left:
                out.write(os.urandom(min(left, WRITE_CHUNK)))
                left -= min(left, WRITE_CHUNK)
    return root


def tree(root: Path) -> dict[str, int]:
    """Every data file below root (without hivecat's manifest) by relative path, with its size."""
    found = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, root)
            if relative != MANIFEST_NAME:
                found[relative] = os.path.getsize(path)
    return found


def warm(root: Path) -> None:
    """Read every file once so all contenders start from the page cache."""
    for relative in tree(root):
        with open(root / relative, "rb") as stream:
            while stream.read(WRITE_CHUNK):
                pass


def fresh(target: Path) -> None:
    """Outside the timed region: no previous target or staging, and no dirty pages left to flush."""
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f"{STAGING_PREFIX}*"):
        shutil.rmtree(stale, ignore_errors=True)
    os.sync()


def engine_fingerprint() -> str:
    """A digest of the copy engine's sources. Spark's Python workers import them when their first
    task runs, so an edit during the run would mix versions: the run then says so and exits 1."""
    package = Path(copy_engine.__file__).parent
    digest = hashlib.sha256()
    for path in sorted([*package.rglob("*.py"), *package.rglob("*.json")]):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


# --- contenders ----------------------------------------------------------------------------------------


@dataclass
class Contender:
    name: str
    copy: Callable[[Path, Path], object]     # (source, fresh target) -> what check() gets
    check: Callable[[Path, Path, object], None] = lambda source, target, result: None


def cp_r(source: Path, target: Path) -> None:
    subprocess.run(["cp", "-r", str(source), str(target)], check=True)


def thread_pool(workers: int) -> Callable[[Path, Path], None]:
    """The plain-Python baseline: shutil.copyfile (sendfile) on a thread pool, no checks."""
    def copy(source: Path, target: Path) -> None:
        with ThreadPoolExecutor(workers) as pool:
            futures = []
            for directory, _, names in os.walk(source):
                into = target / os.path.relpath(directory, source)
                into.mkdir(parents=True, exist_ok=True)
                futures += [pool.submit(shutil.copyfile, os.path.join(directory, n), into / n) for n in names]
            for future in futures:
                future.result()
    return copy


def hivecat(engine: Callable[[], object], verify: str) -> Callable[[Path, Path], object]:
    """What `hivecat distcp --from SOURCE --to TARGET --engine E --verify V` runs, in this process."""
    def copy(source: Path, target: Path):
        return Copier(single_unit_plan(str(source), str(target)), CopyOptions(verify=verify), engine=engine()).run()
    return copy


def hivecat_succeeded(verify: str) -> Callable[[Path, Path, object], None]:
    """hivecat's own account must match: a succeeded summary, every file in the manifest, no staging."""
    def check(source: Path, target: Path, summary) -> None:
        files = tree(source)
        totals = summary.totals()
        if summary.status != "succeeded" or totals["files_copied"] != len(files) \
                or totals["bytes_copied"] != sum(files.values()):
            raise AssertionError(f"hivecat run did not copy everything: {summary.status} {totals}")
        manifest = json.loads((target / MANIFEST_NAME).read_text())
        listed = {f["path"]: f["size"] for f in manifest["files"]}
        if listed != files:
            raise AssertionError("the manifest does not list exactly the source's files and sizes")
        if verify == "checksum" and not all(f["checksum"] for f in manifest["files"]):
            raise AssertionError("--verify checksum left files without a checksum in the manifest")
        if list(target.parent.glob(f"{STAGING_PREFIX}*")):
            raise AssertionError("staging left beside the target")
    return check


def check_copy(source: Path, target: Path, sample: int, seed: int) -> None:
    """Same files with the same sizes; `sample` of them byte-equal."""
    expected, found = tree(source), tree(target)
    if found != expected:
        missing, extra = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
        raise AssertionError(f"{target}: {len(found)} files, {sum(found.values())} bytes; expected "
                             f"{len(expected)}, {sum(expected.values())} (missing {missing[:3]}, extra {extra[:3]})")
    for relative in random.Random(seed).sample(sorted(expected), min(sample, len(expected))):
        if not filecmp.cmp(source / relative, target / relative, shallow=False):
            raise AssertionError(f"{target / relative} differs from the source")


def time_contenders(contenders: list[Contender], source: Path, target: Path, repeat: int,
                    sample: int) -> dict[str, float]:
    """Median seconds per contender; rounds interleave the contenders."""
    seconds: dict[str, list[float]] = {c.name: [] for c in contenders}
    for round_ in range(repeat):
        for contender in contenders:
            fresh(target)
            began = time.perf_counter()
            result = contender.copy(source, target)
            elapsed = time.perf_counter() - began
            check_copy(source, target, sample, seed=round_)
            contender.check(source, target, result)
            seconds[contender.name].append(elapsed)
            log(f"  {source.name} round {round_ + 1}: {contender.name:<16} {elapsed:8.3f} s")
    fresh(target)
    return {name: statistics.median(values) for name, values in seconds.items()}


def spark_empty_job(session, partitions: int) -> float:
    """Median of 3 jobs that do nothing in as many Python tasks as the spark engine schedules (4 per
    core): the fixed cost every spark-engine copy pays on top of its I/O."""
    seconds = []
    for _ in range(3):
        began = time.perf_counter()
        session.sparkContext.parallelize(range(partitions), partitions).map(lambda x: x).collect()
        seconds.append(time.perf_counter() - began)
    return statistics.median(seconds)


# --- no-change rerun -----------------------------------------------------------------------------------


def scan_with_stat(root: str) -> int:
    """The floor: a plain recursive listing with a stat of every file."""
    count = 0
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                count += scan_with_stat(entry.path)
            else:
                entry.stat(follow_symlinks=False)
                count += 1
    return count


def noop_figures(source: Path, target: Path, files: int, repeat: int) -> dict[str, float]:
    Copier(single_unit_plan(str(source), str(target)), CopyOptions(), engine=LocalEngine()).run()
    before = (target / MANIFEST_NAME).stat().st_mtime_ns
    rerun, listing = [], []
    for _ in range(max(repeat, 3)):  # cheap: always a median of at least 3
        began = time.perf_counter()
        summary = hivecat(LocalEngine, "size")(source, target)
        rerun.append(time.perf_counter() - began)
        totals = summary.totals()
        if (summary.status, totals["files_copied"], totals["files_skipped"]) != ("succeeded", 0, files):
            raise AssertionError(f"the no-change rerun was not a no-op: {summary.status} {totals}")
        if (target / MANIFEST_NAME).stat().st_mtime_ns != before:
            raise AssertionError("the no-change rerun rewrote the unit")
        began = time.perf_counter()
        counted = scan_with_stat(str(source)) + scan_with_stat(str(target))
        listing.append(time.perf_counter() - began)
        if counted != 2 * files + 1:  # + the manifest
            raise AssertionError(f"the listing found {counted} files, expected {2 * files + 1}")
    return {"noop_rerun_s": statistics.median(rerun), "noop_listing_s": statistics.median(listing)}


# --- the CLI, profiling --------------------------------------------------------------------------------


def cli_figures(source: Path, target: Path) -> dict[str, float]:
    """Wall time of the real command on the small shape, and of `hivecat --help` (startup alone)."""
    command = shutil.which("hivecat", path=str(Path(sys.executable).parent)) or "hivecat"
    began = time.perf_counter()
    subprocess.run([command, "--help"], check=True, capture_output=True)
    startup = time.perf_counter() - began
    fresh(target)
    began = time.perf_counter()
    done = subprocess.run([command, "distcp", "--from", str(source), "--to", str(target), "--engine", "local",
                           "--verify", "size", "--output", "json"], check=True, capture_output=True, text=True)
    wall = time.perf_counter() - began
    check_copy(source, target, 16, seed=0)
    if json.loads(done.stdout)["status"] != "succeeded":
        raise AssertionError(f"hivecat distcp (CLI) failed: {done.stdout}")
    fresh(target)
    return {"small_cli_s": wall, "cli_startup_s": startup}


class SerialEngine:
    """For --profile only: runs the engines' own file task (`run_task`) on the calling thread, so that
    cProfile, which sees one thread, sees every task. Not a contender: its times are not reported."""

    name = "local"

    def execute(self, tasks, options, progress=None):
        return [run_task(task, options) for task in tasks]


def profile(what: str, action: Callable[[], object], prepare: Callable[[], None] = lambda: None) -> None:
    import cProfile
    import io
    import pstats

    prepare()
    profiler = cProfile.Profile()
    profiler.runcall(action)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(20)
    log(f"--- cProfile: {what} (by own time)\n{out.getvalue()}")


# --- the run -------------------------------------------------------------------------------------------


def run(sizes: Sizes, workdir: Path, with_profile: bool) -> dict:
    figures: dict = {f"{shape}_{k}": v for shape in ("small", "large")
                     for k, v in (("files", getattr(sizes, f"{shape}_files")),
                                  ("file_bytes", getattr(sizes, f"{shape}_file_bytes")))}
    figures.update(noop_files=sizes.noop_files, repeat=sizes.repeat, cpus=os.cpu_count(),
                   load_avg_1m_at_start=round(os.getloadavg()[0], 2), engine_fingerprint=engine_fingerprint())
    began = time.perf_counter()
    shapes = {"small": write_files(workdir / "src" / "small", sizes.small_files, sizes.small_file_bytes),
              "large": write_files(workdir / "src" / "large", sizes.large_files, sizes.large_file_bytes)}
    noop_source = write_files(workdir / "src" / "noop", sizes.noop_files, 1 * KIB, per_directory=1000)
    for source in (*shapes.values(), noop_source):
        warm(source)
    log(f"data written and read: {time.perf_counter() - began:.1f} s")

    began = time.perf_counter()
    session = default_session(None)  # what `--engine spark` creates when no session is active
    figures["spark_start_s"] = time.perf_counter() - began
    try:
        began = time.perf_counter()  # the first job also starts the Python workers: reported apart
        session.sparkContext.parallelize(range(2), 2).map(lambda x: x).collect()
        figures["spark_first_job_s"] = time.perf_counter() - began
        figures["spark_parallelism"] = parallelism = session.sparkContext.defaultParallelism
        figures["spark_empty_job_s"] = spark_empty_job(session, 4 * parallelism)
        workers = LocalEngine().parallelism
        figures["local_parallelism"] = workers
        contenders = [
            Contender("cp", cp_r),
            Contender("pool", thread_pool(workers)),
            Contender("local", hivecat(LocalEngine, "size"), hivecat_succeeded("size")),
            Contender("local_checksum", hivecat(LocalEngine, "checksum"), hivecat_succeeded("checksum")),
            Contender("spark", hivecat(lambda: SparkEngine(session), "size"), hivecat_succeeded("size")),
            Contender("spark_checksum", hivecat(lambda: SparkEngine(session), "checksum"),
                      hivecat_succeeded("checksum")),
        ]
        for shape, source in shapes.items():
            target = workdir / "dst" / shape
            sample = 16 if shape == "small" else 2
            medians = time_contenders(contenders, source, target, sizes.repeat, sample)
            figures.update({f"{shape}_{name}_s": seconds for name, seconds in medians.items()})
    finally:
        session.stop()
    figures.update(cli_figures(shapes["small"], workdir / "dst" / "cli"))
    figures.update(noop_figures(noop_source, workdir / "dst" / "noop", sizes.noop_files, sizes.repeat))
    figures["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    add_ratios(figures)
    figures["engine_changed_during_run"] = engine_fingerprint() != figures["engine_fingerprint"]
    if with_profile:  # after the figures: profiling slows what it watches
        for shape, source in shapes.items():
            target = workdir / "dst" / f"profile-{shape}"
            for verify in ("size", "checksum"):
                profile(f"{shape}, --verify {verify}, tasks serial on the profiled thread",
                        lambda: hivecat(SerialEngine, verify)(source, target), lambda: fresh(target))
        profile("no-change rerun", lambda: hivecat(LocalEngine, "size")(noop_source, workdir / "dst" / "noop"))
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}


def add_ratios(figures: dict) -> None:
    for shape in ("small", "large"):
        cp = figures[f"{shape}_cp_s"]
        for name in ("pool", "local", "local_checksum", "spark", "spark_checksum"):
            figures[f"{shape}_{name}_vs_cp"] = cp / figures[f"{shape}_{name}_s"]
        bytes_ = figures[f"{shape}_files"] * figures[f"{shape}_file_bytes"]
        figures[f"{shape}_cp_mib_s"] = bytes_ / MIB / cp
    figures["noop_rerun_over_listing"] = figures["noop_rerun_s"] / figures["noop_listing_s"]
    met = [figures[f"{shape}_{name}_vs_cp"] >= target for shape in ("small", "large") for name, target in COPY_TARGETS]
    met.append(figures["noop_rerun_over_listing"] <= NOOP_TARGET)
    figures["targets_met"] = sum(met)
    figures["targets_total"] = len(met)


def report(f: dict) -> None:
    for shape in ("small", "large"):
        size = f[f"{shape}_file_bytes"]
        label = f"{size // MIB} MiB" if size >= MIB else f"{size // KIB} KiB"
        print(f"{shape}: {f[f'{shape}_files']:,} x {label}, local -> local, median of {f['repeat']} "
              f"(cp -r {f[f'{shape}_cp_mib_s']:.0f} MiB/s)")
        print(f"  {'cp -r':<22} {f[f'{shape}_cp_s']:8.3f} s   1.00x")
        targets = dict(COPY_TARGETS)
        for name, label in (("pool", "thread pool"), ("local", "hivecat local size"),
                            ("local_checksum", "hivecat local checksum"), ("spark", "hivecat spark size"),
                            ("spark_checksum", "hivecat spark checksum")):
            ratio = f[f"{shape}_{name}_vs_cp"]
            target = targets.get(name)
            verdict = "" if target is None else f"  (target >= {target:.1f}x: {'met' if ratio >= target else 'MISSED'})"
            print(f"  {label:<22} {f[f'{shape}_{name}_s']:8.3f} s   {ratio:.2f}x{verdict}")
    ratio = f["noop_rerun_over_listing"]
    print(f"no-change rerun over {f['noop_files']:,} files: hivecat {f['noop_rerun_s']:.3f} s, "
          f"os.scandir + stat of both trees {f['noop_listing_s']:.3f} s: {ratio:.2f}x "
          f"(target <= {NOOP_TARGET:.0f}x: {'met' if ratio <= NOOP_TARGET else 'MISSED'})")
    print(f"spark session start {f['spark_start_s']:.2f} s, first job {f['spark_first_job_s']:.2f} s "
          f"(not in the spark figures); an empty job of {4 * f['spark_parallelism']} tasks "
          f"{f['spark_empty_job_s']:.2f} s (in them); CLI on the small shape {f['small_cli_s']:.2f} s wall vs "
          f"{f['small_local_s']:.3f} s in-process (`hivecat --help`: {f['cli_startup_s']:.2f} s)")
    print(f"targets met: {f['targets_met']} of {f['targets_total']}; {f['cpus']} CPUs, "
          f"1-min load average {f['load_avg_1m_at_start']} at start, {f['load_avg_1m_at_end']} at the end "
          f"(engine sources {f['engine_fingerprint']})")


def main(argv: list[str] | None = None) -> int:
    sizes, workdir_base, with_profile = parse_args(argv)
    if workdir_base is not None:
        workdir_base.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="hivecat-bench-distcp-", dir=workdir_base))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run still removes its data (finally)
    try:
        figures = run(sizes, workdir, with_profile)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(figures)
    if figures["engine_changed_during_run"]:
        print("WARNING: hivecat/copy changed while the benchmark ran (Spark workers may have run the new code, "
              "the driver the old): these figures mix versions; run again")
    print(json.dumps(figures, sort_keys=True))
    return 1 if figures["engine_changed_during_run"] else 0


if __name__ == "__main__":
    sys.exit(main())
