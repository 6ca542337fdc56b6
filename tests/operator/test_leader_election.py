"""Two operators never both act: two real `hivecat run` processes as the chart runs them (HIVECAT_LEADER_LEASE,
the chart's RBAC, including its leader Role in the release namespace). The first takes the Lease and
handles resources; the second waits and starts no handler. Killed with SIGKILL (no chance to give the Lease
up), the first is replaced by the second once the Lease's duration has passed on its own clock; a normal
stop hands over at once."""

from __future__ import annotations

import signal
import time
from datetime import datetime
from pathlib import Path

from kube.clients import Client
from kube.operator import OperatorProcess
from support.kube_resources import apply, wait_for, wait_reason

from conftest import HIVE_CATALOG_RESOURCE

LEASE, RELEASE_NS, SECONDS = "hivecat-leader", "hivecat-system", 4
WAITING = "waiting for the leader lease"


def storage(name: str) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": name},
            "spec": {"catalogRef": {"name": "nowhere"}, "filesystem": f"hdfs://{name}.example:8020"}}


def lease_time(kubectl: Client, field: str) -> float:
    """A MicroTime of the Lease's spec, as seconds since the epoch."""
    value = kubectl.json("get", "lease", "-n", RELEASE_NS, LEASE)["spec"][field]
    return datetime.strptime(value.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def holder(kubectl: Client) -> str | None:
    lease = kubectl.json("get", "lease", "-n", RELEASE_NS, LEASE)
    return lease["spec"].get("holderIdentity")


def test_one_operator_acts_and_a_standby_takes_over(kubectl: Client, namespace: str, operator_kubeconfig,
                                                    tmp_path: Path) -> None:
    config = operator_kubeconfig(namespace)
    env = {"HIVECAT_LEADER_LEASE": LEASE, "POD_NAMESPACE": RELEASE_NS, "HIVECAT_LEADER_LEASE_SECONDS": str(SECONDS)}
    kubectl("delete", "lease", "-n", RELEASE_NS, LEASE, "--ignore-not-found")
    first = OperatorProcess(config, tmp_path / "first.log", namespace, env={**env, "POD_NAME": "first"})
    second = OperatorProcess(config, tmp_path / "second.log", namespace, env={**env, "POD_NAME": "second"})
    third = OperatorProcess(config, tmp_path / "third.log", namespace, env={**env, "POD_NAME": "third"})
    try:
        first.start(lambda: first.watching(HIVE_CATALOG_RESOURCE))
        assert holder(kubectl).startswith("first_")
        second.start(lambda: WAITING in second.log())
        apply(kubectl, namespace, storage("one"))
        wait_reason(kubectl, namespace, "one", "CatalogNotFound", kind="clusterstorage")
        time.sleep(2)  # the standby has had time to do something, if it were going to
        assert "Starting the watch-stream" not in second.log() and "Handler" not in second.log()

        # SIGKILL: the Lease is not given up; the standby waits out its duration, then takes over. Judged from
        # the Lease's own times (written by the two processes on this machine's clock), never from how long
        # the test waited: the standby acquired it no sooner than a duration after the last renewal.
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(10)
        last_renewal = lease_time(kubectl, "renewTime")
        wait_for("the standby leading", lambda: second.watching(HIVE_CATALOG_RESOURCE), timeout=120)
        assert holder(kubectl).startswith("second_")
        assert lease_time(kubectl, "acquireTime") - last_renewal >= SECONDS - 0.01  # (the times' resolution)
        apply(kubectl, namespace, storage("two"))
        wait_reason(kubectl, namespace, "two", "CatalogNotFound", kind="clusterstorage")

        # A normal stop gives the Lease up: the next standby starts at once.
        third.start(lambda: WAITING in third.log())
        assert second.stop() in (0, -15)
        assert (holder(kubectl) or "third_").startswith("third_")  # given up (or already taken), not left to expire
        wait_for("the third leading", lambda: third.watching(HIVE_CATALOG_RESOURCE), timeout=120)
        assert holder(kubectl).startswith("third_")
    except AssertionError:
        for process in (first, second, third):
            print(f"---- {process.log_path.name} ----\n{process.log()}")
        raise
    finally:
        kubectl("delete", "-n", namespace, "clusterstorages", "--all", "--wait", "--timeout=60s", check=False)
        for process in (first, second, third):
            process.stop()
        kubectl("delete", "lease", "-n", RELEASE_NS, LEASE, "--ignore-not-found")
