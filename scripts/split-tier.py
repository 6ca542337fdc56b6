"""Split test files into N groups of about equal time, for scripts/test-tiers.sh: heaviest first, each into the
group with the least time so far, by the seconds tests/tier-weights gives (a file not listed counts as 10 s).
Prints each group's files, space-separated, one group per line.

Usage: python scripts/split-tier.py N FILE..."""

from __future__ import annotations

import sys
from pathlib import Path

UNLISTED_SECONDS = 10.0


def weights(path: Path) -> dict[str, float]:
    found = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            seconds, name = line.split(maxsplit=1)
            found[name] = float(seconds)
    return found


def split(files: list[str], groups: int, seconds: dict[str, float]) -> list[list[str]]:
    loads = [0.0] * groups
    out: list[list[str]] = [[] for _ in range(groups)]
    for name in sorted(files, key=lambda f: (-seconds.get(f, UNLISTED_SECONDS), f)):
        lightest = loads.index(min(loads))
        loads[lightest] += seconds.get(name, UNLISTED_SECONDS)
        out[lightest].append(name)
    return [sorted(group) for group in out]


if __name__ == "__main__":
    count, names = int(sys.argv[1]), sys.argv[2:]
    for group in split(names, count, weights(Path(__file__).parent.parent / "tests" / "tier-weights")):
        print(" ".join(group))
