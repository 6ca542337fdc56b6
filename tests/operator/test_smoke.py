"""The operator as a user meets it: kubectl applies a HiveCatalog, `hivecat run` acknowledges it, and a
delete goes through the operator's finalizer."""

from __future__ import annotations

import time

from kube.clients import Client

from conftest import EXAMPLES_DIR, GROUP, TIMINGS

CYCLE_SANITY_SECONDS = 60  # generous: the measured cycle is reported, not asserted tightly (speed is no test)


def test_hivecatalog_apply_status_delete_cycle(kubectl: Client, namespace: str, run_operator) -> None:
    run_operator(namespace)
    began = time.monotonic()

    kubectl("apply", "-n", namespace, "-f", str(EXAMPLES_DIR / "hivecatalog-dev-derby.yaml"))
    kubectl("wait", "-n", namespace, "hivecatalog/dev", "--for=jsonpath={.status.observedGeneration}=1",
            "--timeout=60s")
    acknowledged = time.monotonic()
    catalog = kubectl.json("get", "-n", namespace, "hivecatalog", "dev")
    assert f"{GROUP}/finalizer" in catalog["metadata"]["finalizers"]

    kubectl("delete", "-n", namespace, "hivecatalog/dev", "--wait", "--timeout=60s")
    deleted = time.monotonic()
    gone = kubectl("get", "-n", namespace, "hivecatalog", "dev", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr

    TIMINGS["apply→observedGeneration"] = acknowledged - began
    TIMINGS["delete→gone"] = deleted - acknowledged
    TIMINGS["apply→status→delete cycle"] = deleted - began
    assert deleted - began < CYCLE_SANITY_SECONDS


def test_operator_serving_all_namespaces_handles_any_namespace_and_stops_cleanly(
        kubectl: Client, namespace: str, run_operator) -> None:
    operator = run_operator(None)  # hivecat run --standalone --namespace='!kube-system', as the chart's clusterWide
    kubectl("apply", "-n", namespace, "-f", str(EXAMPLES_DIR / "hivecatalog-dev-derby.yaml"))
    kubectl("wait", "-n", namespace, "hivecatalog/dev", "--for=jsonpath={.status.observedGeneration}=1",
            "--timeout=60s")
    kubectl("patch", "-n", namespace, "hivecatalog/dev", "--type=merge", "-p", '{"spec":{"mode":"Thrift"}}')
    kubectl("wait", "-n", namespace, "hivecatalog/dev", "--for=jsonpath={.status.observedGeneration}=2",
            "--timeout=60s")
    kubectl("delete", "-n", namespace, "hivecatalog/dev", "--wait", "--timeout=60s")

    assert operator.stop() == 0  # SIGTERM: kopf's graceful shutdown, no kill needed
    log = operator.log()
    assert "Traceback" not in log and "[ERROR" not in log, log
