"""What only a kubelet shows about the operator's pods: the files their Secret volumes hold, with the owner and
mode the image's user meets. A kerberized copy Job and metastore get their keytab as one file, mode 0400 ("only
the pod's user reads it"); the kubelet writes Secret files as root, so unless the pod has an fsGroup (which the
kubelet gives the file, group-readable, and the pod's processes as a supplementary group) the image's user
cannot read its own keytab. Each pod here is the operator's builder's, with the container's command replaced by
one that reports the file and reads it, on the real node (tests/kube/node.py) in the image it would run."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from kube.clients import Client
from kube.node import NODE_NAME
from support.kube_resources import wait_for

from hivecat.specs.hivecatalog import parse_hive_catalog
from hivecat.specs.kerberos import KerberosSpec
from hivecat.workloads import copy_job as copy
from hivecat.workloads import metastore

NS = "pod-files"
KEYTAB = os.urandom(64)  # the file's bytes only need to come back
# mode, owner and group of the file, the process's uid, and whether it reads the Secret's bytes (else it fails)
REPORT = ("import os, sys; path = sys.argv[1]; info = os.stat(path); "
          "same = open(path, 'rb').read() == bytes.fromhex(os.environ['KEYTAB_HEX']); "
          "print(oct(info.st_mode & 0o777), info.st_uid, info.st_gid, os.getuid(), same)")


def run_pod(kubectl: Client, name: str, spec: dict, image: str, keytab: str, tmp_path: Path) -> list[str]:
    """`spec` (a Job's or Deployment's pod template) as a pod on the real node, its container asked to report
    `keytab` (mode, owner, group), its own uid, and whether it reads the Secret's bytes; the output's words."""
    [container] = spec["containers"]
    container.update(image=image, command=["python3", "-c", REPORT, keytab])
    container["env"] = [e for e in container.get("env", []) if "valueFrom" not in e] + [
        {"name": "KEYTAB_HEX", "value": KEYTAB.hex()}]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
           "spec": {**spec, "nodeName": NODE_NAME, "restartPolicy": "Never"}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(pod))
    kubectl("apply", "-f", str(path))
    phase = wait_for(f"pod {name} done", lambda: kubectl.json("get", "-n", NS, "pod", name)["status"].get("phase")
                     in ("Succeeded", "Failed") and kubectl.json("get", "-n", NS, "pod", name)["status"]["phase"],
                     timeout=120)
    logs = kubectl("logs", "-n", NS, name).stdout
    assert phase == "Succeeded", logs
    return logs.split()


def test_the_kerberized_copy_job_and_metastore_read_their_keytab_and_only_they(
        real_node, kubectl: Client, hivecat_image: str, metastore_image: str, tmp_path: Path) -> None:
    kubectl("create", "namespace", NS)
    keytab = tmp_path / "keytab"
    keytab.write_bytes(KEYTAB)
    kubectl("create", "secret", "generic", "etl-keytab", "-n", NS, f"--from-file=keytab={keytab}")
    kubectl("create", "secret", "generic", "hive-keytab", "-n", NS, f"--from-file=hive.keytab={keytab}")

    run = copy.CopyRun(replica="orders", namespace=NS, catalog="sales", secondary="dr", run_id="r1",
                       plan_uri="file:///tmp/plan.json", plan_digest="sha256:" + "0" * 64, image=hivecat_image,
                       kerberos=KerberosSpec("etl@CORP.EXAMPLE.COM", "etl-keytab"))
    job = copy.copy_job(run)
    mode, owner, group, uid, read = run_pod(kubectl, "copier", job["spec"]["template"]["spec"], hivecat_image,
                                            f"{copy.KEYTAB_DIR}/{copy.KEYTAB_FILE}", tmp_path)
    assert (uid, read) == ("10001", "True"), (mode, owner, group, uid)  # the image's user reads it
    assert mode.endswith("0") and owner == "0", (mode, owner, group)  # and no one else: not world-readable

    spec = parse_hive_catalog({"metadata": {"name": "sales", "namespace": NS, "uid": "u", "generation": 1},
                               "spec": {"database": {"type": "mariadb", "host": "db", "name": "hive", "user": "hive",
                                                     "passwordSecretRef": {"name": "db", "key": "password"}},
                                        "kerberos": {"principal": "etl@CORP.EXAMPLE.COM",
                                                     "keytabSecretRef": {"name": "etl-keytab"},
                                                     "metastorePrincipal": "hive/_HOST@CORP.EXAMPLE.COM",
                                                     "metastoreKeytabSecretRef": {"name": "hive-keytab",
                                                                                  "key": "hive.keytab"}}}},
                              default_image=metastore_image)
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(metastore.metastore_config_map(spec)))
    deployment = metastore.metastore_deployment(spec, "hash")
    mode, owner, group, uid, read = run_pod(kubectl, "metastore", deployment["spec"]["template"]["spec"],
                                            metastore_image, f"{metastore.KEYTAB_DIR}/{metastore.KEYTAB_FILE}",
                                            tmp_path)
    assert (uid, read) == ("1000", "True"), (mode, owner, group, uid)  # hive, as in apache/hive
    assert mode.endswith("0") and owner == "0", (mode, owner, group)
    kubectl("delete", "namespace", NS, "--wait=false")
