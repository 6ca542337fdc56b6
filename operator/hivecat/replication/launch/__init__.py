"""Launching copies: one run of the copy engine (`hivecat distcp --plan`) for one TableReplica and one secondary.

A pass never waits for a run. It asks the secondary's launcher what became of the run an earlier pass started
(`observe`), and starts one when units need a copy and none is in flight (`start`); the run's outcome is picked
up by a later pass, which its end triggers (a Job's or SparkApplication's watch event, a Local child's exit). What a run achieved is
never taken from here: the pass checks the units on the secondary afterwards (replication/verify.py); the
outcome and the engine's summary only explain a failure.

Launchers: `Local` (a child process of the operator, local.py; synchronous for the demo and the CLI), and the
Kubernetes Job and SparkApplication launcher (workload.py; its ports, which build the objects with workloads/
and reach the API server, are the operator's: handlers/copy_launch.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from hivecat.copy.plan import CopyPlan
from hivecat.specs.tablereplica import CopySettings

SUCCEEDED, FAILED, CANCELLED = "Succeeded", "Failed", "Cancelled"   # a run's end
RUNNING, WAITING = "Running", "Waiting"  # in flight; not started yet (no Local slot, an earlier workload going)
FINISHED = (SUCCEEDED, FAILED, CANCELLED)


@dataclass(frozen=True)
class LaunchResult:
    outcome: str                      # SUCCEEDED | FAILED | CANCELLED | RUNNING | WAITING
    message: str = ""
    copy_run_id: str | None = None    # the run's id (a workload's; the copy engine's, from its summary)
    files_copied: int = 0
    bytes_copied: int = 0
    seconds: float = 0.0
    units: tuple[str, ...] = ()       # the ids of the units the run was given

    @property
    def finished(self) -> bool:
        return self.outcome in FINISHED


class Launcher(Protocol):
    """The runs of one TableReplica to one secondary: at most one at a time."""

    def observe(self) -> LaunchResult | None:
        """The run an earlier pass started: RUNNING while it runs; once, its end (then it is forgotten); None
        when there is none."""

    def start(self, plan: CopyPlan, copy: CopySettings) -> LaunchResult:
        """Start a run of `plan`: RUNNING, or WAITING when it cannot start yet, or an end (FAILED: it could not
        start; any end from a launcher that runs to the end before it returns)."""


def distcp_args(plan: str, copy: CopySettings, *, digest: str | None = None, engine: str | None = None,
                delete: bool = True) -> list[str]:
    """The copy engine's arguments after `distcp`, the same for every launcher. `digest` pins the plan read from
    a shared place. --delete: a unit's copy is hivecat's own (units whose target holds data without hivecat's
    manifest never reach a plan), so files gone from the source go from the copy too."""
    args = ["--plan", plan, *(["--plan-digest", digest] if digest else []), "--verify", copy.verify,
            "--engine", engine or copy.engine, *(["--delete"] if delete else [])]
    if copy.parallelism:
        args += ["--parallelism", str(copy.parallelism)]
    if copy.bandwidth_mbps:
        args += ["--bandwidth", str(copy.bandwidth_mbps)]
    return [*args, "--output", "json"]


from hivecat.replication.launch.local import (LocalLauncher, LocalRuns, local_environment)  # noqa: E402

__all__ = ["CANCELLED", "FAILED", "FINISHED", "RUNNING", "SUCCEEDED", "WAITING", "LaunchResult", "Launcher",
           "LocalLauncher", "LocalRuns", "distcp_args", "local_environment"]
