"""The copy engine against S3 (moto server): local <-> S3 byte for byte, -update reruns, object-store
commit (manifest last), and S3 -> S3 done by server-side copies, counted at the HTTP level."""

from __future__ import annotations

import http.client
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from support.copy_trees import read_tree, uri, write_tree

from hivecat.copy import Copier, CopyOptions, CopyPlan, LocalEngine, S3Settings, Storage, Unit, single_unit_plan
from hivecat.copy.storage import parse_uri
from hivecat.copy.documents import UNIT_MANIFEST, validate
from hivecat.copy.manifest import MANIFEST_NAME

FILES = {"part-0.parquet": os.urandom(300_000), "part-1.parquet": b"p1" * 100, "nested/part-2": os.urandom(1000),
         "_SUCCESS": b""}


def copy(source: str, target: str, **options) -> dict:
    storage = Storage(S3Settings.from_environment())
    return Copier(single_unit_plan(source, target), CopyOptions(**options), storage, LocalEngine(4)).run().to_dict()


def s3_tree(s3, bucket: str, prefix: str) -> dict[str, bytes]:
    keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/")
            for o in page.get("Contents", [])]
    return {k[len(prefix) + 1:]: s3.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys}


@pytest.fixture
def lake(moto):
    s3 = moto.client("s3")
    s3.create_bucket(Bucket="lake")
    s3.create_bucket(Bucket="replica")
    return s3


def test_local_to_s3_and_back_byte_for_byte_with_update_reruns(lake, tmp_path: Path) -> None:
    write_tree(tmp_path / "src", FILES)
    first = copy(uri(tmp_path / "src"), "s3://lake/warehouse/t")
    assert first["totals"]["files_copied"] == 4
    on_s3 = s3_tree(lake, "lake", "warehouse/t")
    manifest = json.loads(on_s3.pop(MANIFEST_NAME))
    validate(UNIT_MANIFEST, manifest)
    assert on_s3 == FILES
    assert not [k for k in s3_tree(lake, "lake", "warehouse") if k.startswith(".hivecat-staging")]

    assert copy(uri(tmp_path / "src"), "s3://lake/warehouse/t")["totals"]["files_copied"] == 0
    (tmp_path / "src" / "part-1.parquet").write_bytes(b"changed")
    again = copy(uri(tmp_path / "src"), "s3://lake/warehouse/t")
    assert again["totals"]["files_copied"] == 1 and again["totals"]["files_skipped"] == 3
    assert s3_tree(lake, "lake", "warehouse/t")["part-1.parquet"] == b"changed"

    back = copy("s3://lake/warehouse/t", uri(tmp_path / "back"), verify="checksum")
    assert back["totals"]["files_copied"] == 4
    assert read_tree(tmp_path / "back") == {**FILES, "part-1.parquet": b"changed"}
    assert copy("s3://lake/warehouse/t", uri(tmp_path / "back"))["totals"]["files_copied"] == 0


def test_s3_unit_without_current_manifest_is_absent_and_delete_stays_inside(lake, tmp_path: Path) -> None:
    write_tree(tmp_path / "src", FILES)
    copy(uri(tmp_path / "src"), "s3://lake/t/dt=1")
    lake.put_object(Bucket="lake", Key="t/dt=1/stray", Body=b"x")
    lake.put_object(Bucket="lake", Key="t/outside", Body=b"keep")
    lake.delete_object(Bucket="lake", Key=f"t/dt=1/{MANIFEST_NAME}")  # as after a crash mid-commit
    summary = copy(uri(tmp_path / "src"), "s3://lake/t/dt=1", delete=True)
    assert summary["totals"]["files_copied"] == 4 and summary["totals"]["files_deleted"] == 1
    after = s3_tree(lake, "lake", "t/dt=1")
    assert MANIFEST_NAME in after and "stray" not in after
    assert lake.get_object(Bucket="lake", Key="t/outside")["Body"].read() == b"keep"


def test_missing_target_bucket_is_bad_input(lake, tmp_path: Path) -> None:
    write_tree(tmp_path / "src", FILES)
    from hivecat.copy import CopyInputError

    with pytest.raises(CopyInputError, match="target bucket s3://nobucket does not exist"):
        copy(uri(tmp_path / "src"), "s3://nobucket/t")


def test_units_checked_side_by_side_refuse_the_run_for_the_first_bad_unit_in_plan_order(lake, tmp_path: Path) -> None:
    from hivecat.copy import CopyInputError

    lake.put_object(Bucket="replica", Key="t/dt=11", Body=b"an object where a unit's directory would be")
    units = []
    for index in range(24):
        if index not in (7, 15):  # their sources do not exist
            write_tree(tmp_path / "src" / f"dt={index:02d}", {"part-0": b"x"})
        units.append(Unit(f"dt={index:02d}", parse_uri(uri(tmp_path / "src" / f"dt={index:02d}")),
                          parse_uri(f"s3://replica/t/dt={index:02d}")))
    for _ in range(3):  # whichever check finishes first, the refusal is the same
        with pytest.raises(CopyInputError, match=r"source file://\S+/dt=07 does not exist"):
            Copier(CopyPlan(tuple(units)), CopyOptions(), Storage(S3Settings.from_environment()), LocalEngine(4)).run()
    del units[15], units[7]
    with pytest.raises(CopyInputError, match="target s3://replica/t/dt=11 is not a directory"):
        Copier(CopyPlan(tuple(units)), CopyOptions(), Storage(S3Settings.from_environment()), LocalEngine(4)).run()
    assert list(s3_tree(lake, "replica", "t")) == ["dt=11"]  # refused before anything was written


# --- S3 -> S3: count what reaches the server ------------------------------------------------------

class CountingProxy(ThreadingHTTPServer):
    """A loopback HTTP proxy in front of moto that records each request's method, path and whether
    it is a server-side copy (x-amz-copy-source)."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        self.upstream = urlparse(upstream)
        self.requests: list[tuple[str, str, bool]] = []
        self.in_flight = self.most_in_flight = 0  # requests being answered at once (now, at most)
        self._lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _ProxyHandler)

    def counted(self, delta: int) -> None:
        with self._lock:
            self.in_flight += delta
            self.most_in_flight = max(self.most_in_flight, self.in_flight)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _forward(self) -> None:
        server: CountingProxy = self.server  # type: ignore[assignment]
        chunked = self.headers.get("Transfer-Encoding", "").lower() == "chunked"
        body = self._read_chunked() if chunked else self.rfile.read(int(self.headers.get("Content-Length") or 0))
        server.requests.append((self.command, self.path, "x-amz-copy-source" in self.headers))
        upstream = http.client.HTTPConnection(server.upstream.hostname, server.upstream.port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("transfer-encoding", "expect")}
        headers["Content-Length"] = str(len(body))
        server.counted(+1)
        try:
            upstream.request(self.command, self.path, body, headers)
            response = upstream.getresponse()
            data = response.read()
        finally:
            server.counted(-1)
        self.send_response_only(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(key, value)
        # HEAD answers carry the object's length without a body
        self.send_header("Content-Length", response.getheader("Content-Length", "0") if self.command == "HEAD"
                         else str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        upstream.close()

    def _read_chunked(self) -> bytes:
        body = b""
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            body += self.rfile.read(size)
            self.rfile.readline()
        while self.rfile.readline().strip():  # trailers
            pass
        return body

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def proxy(moto, monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingProxy]:
    server = CountingProxy(moto.endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
    yield server
    server.shutdown()


def object_requests(proxy: CountingProxy, bucket: str, prefix: str) -> list[tuple[str, str, bool]]:
    """Requests on object keys under bucket/prefix (not bucket listings)."""
    return [(m, p, c) for m, p, c in proxy.requests if urlparse(p).path.startswith(f"/{bucket}/{prefix}")]


def test_s3_to_s3_uses_server_side_copies_not_get_and_put(lake, proxy: CountingProxy) -> None:
    for key, data in FILES.items():
        lake.put_object(Bucket="lake", Key=f"t/dt=1/{key}", Body=data)
    big = os.urandom(6 * 1024 * 1024)  # copied in two UploadPartCopy parts below
    lake.put_object(Bucket="lake", Key="t/dt=1/big", Body=big)
    proxy.requests.clear()
    summary = copy("s3://lake/t/dt=1", "s3://replica/t/dt=1",
                   transfer_overrides={"multipart_threshold": 5 * 1024 * 1024, "part_size": 5 * 1024 * 1024})
    assert summary["status"] == "succeeded", summary["units"][0]["reason"]
    assert summary["totals"]["files_copied"] == 5
    assert s3_tree(lake, "replica", "t/dt=1") | {MANIFEST_NAME: b""} == {**FILES, "big": big, MANIFEST_NAME: b""}

    source_reads = [r for r in object_requests(proxy, "lake", "t/") if r[0] == "GET"]
    assert source_reads == []  # no object bytes read from the source ...
    writes = [(unquote(urlparse(p).path), urlparse(p).query, c)
              for m, p, c in object_requests(proxy, "replica", "t/") if m == "PUT"]
    uploads = {path for path, query, copy_source in writes if not copy_source}  # PutObject, UploadPart
    assert uploads == {f"/replica/t/dt=1/{MANIFEST_NAME}"}  # ... and only the manifest is uploaded
    copies = [path for path, query, copy_source in writes if copy_source and "partNumber" not in query]
    part_copies = [path for path, query, copy_source in writes if copy_source and "partNumber" in query]
    # every small file: into staging, then into place; `big`: two parts into staging
    assert sorted(p.rsplit("/", 1)[-1] for p in copies if "staging" in p) == \
        sorted(k.rsplit("/", 1)[-1] for k in FILES)
    assert len([p for p in copies if "staging" not in p]) == 5
    assert len(part_copies) == 2 and all("staging" in p for p in part_copies)
    manifest = json.loads(lake.get_object(Bucket="replica", Key=f"t/dt=1/{MANIFEST_NAME}")["Body"].read())
    assert all(f["etag"] for f in manifest["files"])

    proxy.requests.clear()
    assert copy("s3://lake/t/dt=1", "s3://replica/t/dt=1")["totals"]["files_copied"] == 0
    assert not [r for r in proxy.requests if r[2] or r[0] in ("PUT", "POST", "DELETE")]


# --- keys that are not paths inside the unit --------------------------------------------------------

def test_source_keys_that_leave_the_unit_fail_it_and_nothing_is_written_outside_the_target(
        lake, tmp_path: Path) -> None:
    """S3 keys are names, not paths: `t//<abs>/f` and `t/a/../../f` are keys below `t/` but, joined to a
    local target, land outside it. Such a unit fails naming the key; no file or directory appears outside
    the target (its staging, beside it, is removed)."""
    work = tmp_path / "work"
    work.mkdir()
    lake.put_object(Bucket="lake", Key="t/dt=1/part-0", Body=b"fine")
    escapes = {f"t/dt=1/{tmp_path}/escaped-absolute/f",                 # `dt=1//tmp/...`: an empty segment
               "t/dt=1/a/../../../../escaped-dots/f",                   # up and out of staging and target
               "t/dt=1/./b/f"}                                           # "." aliases dt=1/b/f on disk
    for key in escapes:
        lake.put_object(Bucket="lake", Key=key, Body=b"escaped")
    assert escapes <= {o["Key"] for o in lake.list_objects_v2(Bucket="lake", Prefix="t/")["Contents"]}
    before = sorted(tmp_path.rglob("*"))
    summary = copy("s3://lake/t/dt=1", uri(work / "dst"))
    assert sorted(tmp_path.rglob("*")) == before  # nothing committed, nothing escaped, no staging left
    unit = summary["units"][0]
    assert summary["status"] == "failed" and unit["status"] == "failed"
    assert "does not name a file inside the unit" in unit["reason"], unit["reason"]
    # The unit fails before anything is staged, naming an offending key below the unit (and how many more).
    assert any(unit["reason"].startswith(key.removeprefix("t/dt=1/") + ":") for key in escapes), unit["reason"]
    assert "(and 2 more)" in unit["reason"]


def test_delete_removes_odd_target_keys_inside_the_unit_and_nothing_outside(lake, tmp_path: Path) -> None:
    """`t/dt=1//x` is an object of the unit: --delete removes it, not `x` at the bucket's root (which its
    remainder `/x`, joined as a path, would name)."""
    write_tree(tmp_path / "src", FILES)
    copy(uri(tmp_path / "src"), "s3://lake/t/dt=1")
    for key in ("t/dt=1//x", "x", "t/x"):
        lake.put_object(Bucket="lake", Key=key, Body=b"odd")
    summary = copy(uri(tmp_path / "src"), "s3://lake/t/dt=1", delete=True)
    assert summary["status"] == "succeeded" and summary["totals"]["files_deleted"] == 1
    keys = {o["Key"] for o in lake.list_objects_v2(Bucket="lake")["Contents"]}
    assert {"x", "t/x"} <= keys and "t/dt=1//x" not in keys


# --- many units: decided and committed side by side, each failing alone ------------------------------

def test_units_on_s3_are_decided_side_by_side_in_plan_order_and_fail_alone(lake, proxy: CountingProxy,
                                                                           tmp_path: Path) -> None:
    units = []
    for index in range(16):
        write_tree(tmp_path / "src" / f"dt={index:02d}", {"part-0": f"row {index}".encode()})
        expected = ("part-0", "absent") if index == 5 else ("part-0",)  # unit 5's source lacks a file
        units.append(Unit(f"dt={index:02d}", parse_uri(uri(tmp_path / "src" / f"dt={index:02d}")),
                          parse_uri(f"s3://replica/t/dt={index:02d}"), expected))
    plan = CopyPlan(tuple(units))

    def run() -> dict:
        return Copier(plan, CopyOptions(), Storage(S3Settings.from_environment()), LocalEngine(4)).run().to_dict()

    first = run()
    assert [u["id"] for u in first["units"]] == [u.id for u in units]  # the plan's order, whatever finished first
    assert [u["id"] for u in first["units"] if u["status"] == "failed"] == ["dt=05"]
    assert "absent" in first["units"][5]["reason"]
    copied = s3_tree(lake, "replica", "t")
    assert {k for k in copied if k.endswith(MANIFEST_NAME)} == {f"dt={i:02d}/{MANIFEST_NAME}" for i in range(16)
                                                                 if i != 5}
    assert copied["dt=07/part-0"] == b"row 7" and not [k for k in copied if k.startswith("dt=05/")]
    assert not [k for k in s3_tree(lake, "replica", "") if ".hivecat-staging" in k]

    proxy.requests.clear()
    proxy.most_in_flight = 0
    rerun = run()  # deciding alone: listings and manifest reads, no commit
    assert [u["status"] for u in rerun["units"]] == ["failed" if i == 5 else "skipped" for i in range(16)]
    assert not [r for r in proxy.requests if r[0] in ("PUT", "POST", "DELETE")]
    assert proxy.most_in_flight > 1  # one unit after another would never have two requests out


def test_a_first_copy_of_small_units_makes_no_round_trip_it_does_not_need(lake, proxy: CountingProxy,
                                                                          tmp_path: Path) -> None:
    """Per unit of one small file: no multipart upload (one PUT each), the bucket checked once per run, no
    manifest read or deleted where the listing showed none; what stays is the unit's listings, the staged
    file, its checks, the server-side copy and the manifest."""
    units = []
    for index in range(16):
        write_tree(tmp_path / "src" / f"dt={index:02d}", {"part-0": os.urandom(2048)})
        units.append(Unit(f"dt={index:02d}", parse_uri(uri(tmp_path / "src" / f"dt={index:02d}")),
                          parse_uri(f"s3://replica/t/dt={index:02d}")))
    proxy.requests.clear()
    summary = Copier(CopyPlan(tuple(units)), CopyOptions(), Storage(S3Settings.from_environment()),
                     LocalEngine(4)).run().to_dict()
    assert summary["status"] == "succeeded" and summary["totals"]["files_copied"] == 16
    requests = [(method, urlparse(path)) for method, path, _ in proxy.requests]
    assert [m for m, url in requests if url.path.rstrip("/") == "/replica" and m == "HEAD"] == ["HEAD"]
    assert not [url for _, url in requests if "uploads" in url.query or "uploadId" in url.query]
    assert len([url for m, url in requests if m == "POST" and "delete" in url.query]) == 1  # the staging, at the end
    manifests = [m for m, url in requests if url.path.endswith(f"/{MANIFEST_NAME}")]
    assert sorted(manifests) == ["HEAD"] * 16 + ["PUT"] * 16  # the check before each commit, then the write
    assert len(requests) <= 11 * len(units)
