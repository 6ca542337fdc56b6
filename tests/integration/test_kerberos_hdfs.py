"""`hivecat distcp` on kerberized HDFS: SPNEGO to WebHDFS over HTTPS, SASL data transfer, a real MIT KDC.

Two MiniDFSClusters secured as production secures them without root (support.secure_hdfs) serve the module.
What hivecat writes is read back with Hadoop's own client (FsShell over RPC, as the ticket of a kinit), never
through the backend under test; file owners show which principal wrote them. The process's default ticket cache
holds a third principal's ticket throughout (an "intruder"), so any use of it instead of the login's own store
shows up as a file owned by that principal.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.copy_trees import read_tree, uri, write_tree
from support.hdfs import HdfsCluster, hadoop_jar_dir  # noqa: F401,F811  (fixture by name)
from support.kdc import Kdc, kdc  # noqa: F401,F811  (fixture by name)
from support.secure_hdfs import HdfsSecurity, fs_shell

from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.copy.webhdfs import WebHdfsClient
from hivecat.kerberos.login import KerberosLogin

FILES = {"part-0.parquet": os.urandom(300_000), "dt=2026-11-01/part-1": os.urandom(5_000), "_SUCCESS": b""}
HTTP_PRINCIPAL = "HTTP/_HOST@HIVECAT.TEST"


@dataclass
class Secured:
    kdc: Kdc
    source: HdfsCluster
    target: HdfsCluster
    ca_bundle: Path
    keytabs: dict[str, Path]   # alice, bob: principals of two teams
    intruder_cache: str        # the process's default ticket cache: a third principal's ticket
    reader_cache: str          # alice's ticket, for Hadoop's own client

    def env(self, **extra: str) -> dict[str, str]:
        endpoints = ",".join(f"{c.authority}={c.http_url}" for c in (self.source, self.target))
        return {**os.environ, **self.kdc.env, "KRB5CCNAME": self.intruder_cache,
                "HIVECAT_WEBHDFS_ENDPOINTS": endpoints, "HIVECAT_WEBHDFS_CA_BUNDLE": str(self.ca_bundle),
                "HIVECAT_WEBHDFS_PRINCIPAL": HTTP_PRINCIPAL, **extra}

    def tree(self, cluster: HdfsCluster, path: str, into: Path) -> dict[str, bytes]:
        fs_shell(cluster, self.reader_cache, "-get", path, str(into))
        return read_tree(into)

    def owners(self, cluster: HdfsCluster, path: str) -> set[str]:
        listing = fs_shell(cluster, self.reader_cache, "-ls", "-R", path)
        return {line.split()[2] for line in listing.splitlines() if line[:1] in "-d" and len(line.split()) > 7}


@pytest.fixture(scope="module")
def secured(kdc: Kdc, hadoop_jar_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    work = tmp_path_factory.mktemp("kerberized")
    security = HdfsSecurity(kdc, work / "security")
    keytabs = {}
    for name in ("alice", "bob", "intruder"):
        if not (work / f"{name}.keytab").exists():
            kdc.principal(name)
        keytabs[name] = kdc.keytab(name, work / f"{name}.keytab")
    clusters = [HdfsCluster(work / name, jars=hadoop_jar_dir, security=security) for name in ("source", "target")]
    try:
        for cluster in clusters:
            cluster.start(format=True)
    except (RuntimeError, TimeoutError, FileNotFoundError) as exc:
        for cluster in clusters:
            cluster.stop()
        pytest.fail(f"kerberized HDFS could not start: {exc}")
    intruder, reader = f"FILE:{work}/intruder.cc", f"FILE:{work}/reader.cc"
    kdc.kinit("intruder", keytabs.pop("intruder"), intruder)
    kdc.kinit("alice", keytabs["alice"], reader)
    print(f"kerberized HDFS start seconds: {[c.start_seconds for c in clusters]}, KDC {kdc.start_seconds}")
    try:
        yield Secured(kdc, clusters[0], clusters[1], security.ca_bundle, keytabs, intruder, reader)
    finally:
        for cluster in clusters:
            cluster.stop()


def distcp(env: dict[str, str], source: str, target: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hivecat", "distcp", "--from", source, "--to", target,
                           "--engine", "local", *extra], capture_output=True, text=True, env=env, timeout=180)


def at_once(target, arguments: list[tuple], timeout: float = 120) -> None:
    """`target(*args)` for each of `arguments`, each on a thread of its own, all started before any is joined."""
    threads = [threading.Thread(target=target, args=args) for args in arguments]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_local_to_kerberized_hdfs_to_kerberized_hdfs_verified(secured: Secured, tmp_path: Path) -> None:
    write_tree(tmp_path / "src", FILES)
    as_alice = ["--principal", "alice", "--keytab", str(secured.keytabs["alice"])]
    first = f"{secured.source.uri}/warehouse/sales/t"
    second = f"{secured.target.uri}/warehouse/sales/t"
    env = secured.env()
    for source, target in ((uri(tmp_path / "src"), first), (first, second)):
        done = distcp(env, source, target, *as_alice, "--verify", "checksum")
        assert done.returncode == 0, done.stderr
        assert "1 unit(s) copied" in done.stdout
    for cluster in (secured.source, secured.target):
        assert secured.tree(cluster, "/warehouse/sales/t", tmp_path / f"got-{cluster.rpc_port}") == FILES
        assert secured.owners(cluster, "/warehouse/sales") == {"alice"}  # never the default cache's intruder
    again = distcp(env, first, second, *as_alice, "--output", "json")
    assert again.returncode == 0 and '"files_copied": 0' in again.stdout, again.stdout
    back = distcp(env, second, uri(tmp_path / "back"), *as_alice)
    assert back.returncode == 0, back.stderr
    assert read_tree(tmp_path / "back") == FILES


def test_kerberized_hdfs_to_s3_and_back_with_the_login_from_the_environment(secured: Secured, moto,
                                                                             tmp_path: Path) -> None:
    s3 = moto.client("s3")
    s3.create_bucket(Bucket="lake")
    write_tree(tmp_path / "src", FILES)
    env = secured.env(HIVECAT_KERBEROS_PRINCIPAL="bob@HIVECAT.TEST", HIVECAT_KERBEROS_KEYTAB=str(secured.keytabs["bob"]))
    on_hdfs = f"{secured.source.uri}/lake/orders"
    for source, target in ((uri(tmp_path / "src"), on_hdfs), (on_hdfs, "s3://lake/orders"),
                           ("s3://lake/orders", f"{secured.target.uri}/lake/orders")):
        done = distcp(env, source, target, "--verify", "checksum")
        assert done.returncode == 0, done.stderr
    got = {o["Key"][len("orders/"):]: s3.get_object(Bucket="lake", Key=o["Key"])["Body"].read()
           for o in s3.list_objects_v2(Bucket="lake", Prefix="orders/")["Contents"]}
    got.pop(MANIFEST_NAME)
    assert got == FILES
    assert secured.tree(secured.target, "/lake/orders", tmp_path / "back") == FILES  # the manifest left out
    assert secured.owners(secured.target, "/lake") == {"bob"}


# Hostile: two teams' principals in one process at once (as the operator holds them), threads interleaving
# their requests, with a third principal's ticket in the process's default cache. Each file must be owned by
# the principal whose client wrote it.
def test_two_principals_at_once_never_borrow_each_others_tickets(secured: Secured, monkeypatch) -> None:
    monkeypatch.setenv("KRB5_CONFIG", secured.kdc.env["KRB5_CONFIG"])
    monkeypatch.setenv("KRB5CCNAME", secured.intruder_cache)
    url = secured.source.http_url
    clients = {name: WebHdfsClient(url, None, KerberosLogin(name, str(secured.keytabs[name])), str(secured.ca_bundle),
                                   HTTP_PRINCIPAL) for name in ("alice", "bob")}
    errors: list[BaseException] = []

    def write(name: str, index: int) -> None:
        try:
            clients[name].mkdirs(f"/teams/{name}-{index}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    at_once(write, [(name, i) for i in range(12) for name in ("alice", "bob")])
    assert not errors, errors
    listing = fs_shell(secured.source, secured.reader_cache, "-ls", "/teams")
    owners = {line.split()[-1].rsplit("/", 1)[1]: line.split()[2] for line in listing.splitlines()
              if line.startswith("d")}
    assert len(owners) == 24
    assert all(owner == directory.split("-")[0] for directory, owner in owners.items()), owners
    cache = subprocess.run(["klist", "-c", secured.intruder_cache], capture_output=True, text=True,
                           env={**os.environ, **secured.kdc.env}).stdout
    assert "intruder@HIVECAT.TEST" in cache and "HTTP/localhost" not in cache  # the default cache was not used


@pytest.fixture(scope="module")
def failure_cases(secured: Secured, tmp_path_factory: pytest.TempPathFactory
                  ) -> dict[str, tuple[list[str], dict[str, str], str]]:
    """Each case: the CLI's login arguments, extra environment, and words its one line must hold."""
    kdc, work = secured.kdc, tmp_path_factory.mktemp("logins")
    stale = kdc.keytab(kdc.principal("stale"), work / "stale.keytab")
    kdc.keytab("stale", work / "newer.keytab")  # new keys: the first keytab is stale
    gone = kdc.keytab(kdc.principal("gone"), work / "gone.keytab")
    kdc.kadmin("delprinc -force gone")
    expiring = f"FILE:{work}/expiring.cc"
    kdc.kinit("bob", secured.keytabs["bob"], expiring, lifetime="1s")
    time.sleep(2)
    alice = str(secured.keytabs["alice"])
    secured.keytabs.update(stale=stale, gone=gone)  # whose bytes must never be printed
    return {
        "wrong keytab": (["--principal", "stale", "--keytab", str(stale)], {}, "not the principal's current keys"),
        "unknown principal": (["--principal", "gone", "--keytab", str(gone)], {}, "unknown to the KDC"),
        "expired ticket": ([], {"KRB5CCNAME": expiring}, "expired"),
        "realm mismatch": (["--principal", "alice@OTHER.TEST", "--keytab", alice], {},
                           "holds no key for alice@OTHER.TEST (it holds alice@HIVECAT.TEST)"),
        "missing keytab": (["--principal", "alice", "--keytab", str(work / "none.keytab")], {}, "cannot be read"),
        "no ticket": ([], {"KRB5CCNAME": f"FILE:{work}/empty.cc"}, "there is no ticket"),
        "untrusted certificate": (["--principal", "alice", "--keytab", alice], {"HIVECAT_WEBHDFS_CA_BUNDLE": ""},
                                  "TLS certificate of https://localhost"),
    }


@pytest.mark.parametrize("case", ["wrong keytab", "unknown principal", "expired ticket", "realm mismatch",
                                  "missing keytab", "no ticket", "untrusted certificate"])
def test_a_login_that_cannot_work_is_one_line_and_writes_nothing(secured: Secured, failure_cases, case: str,
                                                                tmp_path: Path) -> None:
    arguments, extra, words = failure_cases[case]
    write_tree(tmp_path / "src", FILES)
    target = f"/refused/{tmp_path.name}"
    done = distcp(secured.env(**extra), uri(tmp_path / "src"), f"{secured.source.uri}{target}", *arguments)
    assert done.returncode == 2, done
    line = one_line(done)
    assert words in line, line
    for keytab in secured.keytabs.values():
        assert keytab.read_bytes()[-32:] not in (done.stdout + done.stderr).encode()  # key bytes
    assert "refused" not in fs_shell(secured.source, secured.reader_cache, "-ls", "/")  # nothing written


# Hostile, as the operator runs it: two namespaces' ClusterStorages on one kerberized HDFS, each with its own
# principal and keytab Secret, reached through the operator's routes (replication.routes.cluster_storage) and its
# keytab store, at once from interleaving threads, while the operator's default ticket cache holds another
# principal's ticket. Each namespace's files must be owned by its own principal.
def test_two_namespaces_logins_in_the_operator_stay_apart(secured: Secured, tmp_path: Path, monkeypatch) -> None:
    from pyarrow import fs as pafs

    from hivecat.copy.storage import Storage, WebHdfsSettings, parse_uri
    from hivecat.kerberos.store import KeytabStore
    from hivecat.replication.routes import ClusterAccess, cluster_storage
    from hivecat.specs.kerberos import KerberosSpec

    monkeypatch.setenv("KRB5CCNAME", secured.intruder_cache)
    ambient = Storage(webhdfs=WebHdfsSettings(((secured.source.authority, secured.source.http_url),), "operator",
                                              None, str(secured.ca_bundle)))
    store = KeytabStore(tmp_path / "operator-keytabs")
    secrets = {("team-a", "alice-keytab"): secured.keytabs["alice"].read_bytes(),
               ("team-b", "bob-keytab"): secured.keytabs["bob"].read_bytes()}
    routes = {}
    for namespace, principal, secret in (("team-a", "alice@HIVECAT.TEST", "alice-keytab"),
                                         ("team-b", "bob@HIVECAT.TEST", "bob-keytab")):
        kerberos = KerberosSpec(principal, secret, webhdfs_principal=HTTP_PRINCIPAL)
        access = ClusterAccess("dr", secured.source.uri, None, kerberos=kerberos)
        routes[namespace] = cluster_storage(
            access, ambient, lambda name: pytest.fail("a kerberized cluster reads no credentials Secret"),
            lambda k, ns=namespace: store.login(ns, k.principal, secrets[(ns, k.keytab_secret)]))
    errors: list[BaseException] = []

    def write(namespace: str, index: int) -> None:
        try:
            location = parse_uri(f"{secured.source.uri}/namespaces/{namespace}/unit-{index}")
            filesystem = routes[namespace].filesystem(location)
            filesystem.create_dir(location.path, recursive=True)
            with filesystem.open_output_stream(f"{location.path}/part-0") as out:
                out.write(namespace.encode() * 100)
            assert filesystem.get_file_info(location.path).type == pafs.FileType.Directory
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    at_once(write, [(ns, i) for i in range(8) for ns in ("team-a", "team-b")])
    assert not errors, errors
    assert secured.owners(secured.source, "/namespaces/team-a") == {"alice"}
    assert secured.owners(secured.source, "/namespaces/team-b") == {"bob"}
    for keytab in (tmp_path / "operator-keytabs").iterdir():
        assert keytab.stat().st_mode & 0o077 == 0  # the operator's copies are its own
