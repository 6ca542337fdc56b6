"""scripts/split-tier.py: how `make test` splits a tier's files into processes of about equal time."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("split_tier", ROOT / "scripts" / "split-tier.py")
assert SPEC is not None and SPEC.loader is not None
split_tier = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(split_tier)


def test_heaviest_first_into_the_lightest_group_every_file_once() -> None:
    seconds = {"a": 300.0, "b": 200.0, "c": 150.0, "d": 100.0, "e": 50.0}
    groups = split_tier.split(["e", "d", "c", "b", "a", "new"], 2, seconds)
    assert sorted(f for group in groups for f in group) == ["a", "b", "c", "d", "e", "new"]
    loads = [sum(seconds.get(f, split_tier.UNLISTED_SECONDS) for f in group) for group in groups]
    assert groups == [["a", "d", "new"], ["b", "c", "e"]] and loads == [410.0, 400.0]


def test_every_listed_file_exists_and_the_tiers_split_evenly() -> None:
    """A renamed test file would silently count as unlisted: the weights name files that exist."""
    weights = split_tier.weights(ROOT / "tests" / "tier-weights")
    assert weights and all((ROOT / name).is_file() for name in weights), \
        [name for name in weights if not (ROOT / name).is_file()]
    for tier in ("integration", "operator"):
        files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / tier).glob("test_*.py"))
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "split-tier.py"), "2", *files],
                              capture_output=True, text=True, check=True, cwd=ROOT)
        groups = [line.split() for line in done.stdout.splitlines()]
        assert len(groups) == 2 and sorted(sum(groups, [])) == files
        loads = [sum(weights.get(f, split_tier.UNLISTED_SECONDS) for f in group) for group in groups]
        assert max(loads) <= 1.25 * min(loads), (tier, loads)
