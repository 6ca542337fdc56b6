"""Plans kept where a copy run reads them: the operator writes a TableReplica's plan to the secondary cluster's
own filesystem and the copy Job or SparkApplication reads it back from there.

Why there: a plan for 100,000 partitions is tens of MB, far over a ConfigMap's 1 MiB, and the copy workload
must reach that filesystem anyway (it writes the copies there). The place is
`<secondary filesystem>/.hivecat/plans/<namespace>/<replica>/<run id>.json` (plan_location): a hidden
directory, which Hive and Spark skip when they list, beside and never inside the tables.

A plan is written whole or not at all: on file:// and hdfs:// to a temporary name in the same directory, then
renamed into place; on S3 an object appears only when its upload completes. On file:// a plan is written and
read without following a symbolic link anywhere in its path (copy/localfs.py). The plan carries its owner
and the units' `adopt` (copy/owner.py) as part of its bytes, so the digest pins them too. Its sha256 digest
(`sha256:<hex>`, over the exact bytes written) goes into the copy workload's arguments, and the reader refuses
a plan whose bytes differ: a run never copies by a plan other than the one the operator wrote, whoever can
write to the secondary's filesystem.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from typing import TYPE_CHECKING, Final

from hivecat.copy.errors import CopyInputError
from hivecat.copy.plan import CopyPlan, plan_from_bytes
from hivecat.copy.storage import Location, Storage, local_path, parse_uri

if TYPE_CHECKING:
    from pyarrow import fs as pafs_types

# Far above any real plan (a unit takes about 250-400 bytes, so 100,000 partitions are some 40 MB and a million,
# the most check_overlaps is built for, about 400 MB), yet a bound on what a copy pod loads into memory: a larger
# file is not a plan hivecat wrote, and it is refused by its size, before a byte of it is read.
MAX_PLAN_BYTES: Final = 512 * 1024 * 1024
PLANS_DIR: Final = ".hivecat/plans"
DIGEST_ALGORITHM: Final = "sha256"
_DIGEST: Final = re.compile(r"sha256:[0-9a-f]{64}")
_SEGMENT: Final = re.compile(r"[A-Za-z0-9][-A-Za-z0-9_.]*")  # Kubernetes names and copy run ids


def plan_location(filesystem: str, namespace: str, replica: str, run_id: str) -> str:
    """Where the plan of run `run_id` of TableReplica `namespace/replica` lives on the secondary's
    `filesystem` (a ClusterStorage's canonical spec.filesystem: scheme://authority/path, no trailing slash)."""
    for what, segment in (("namespace", namespace), ("replica", replica), ("run id", run_id)):
        if not _SEGMENT.fullmatch(segment) or segment in (".", ".."):
            raise ValueError(f"plan location: {what} {segment!r} is not a single path segment")
    base = filesystem if filesystem.endswith("/") else f"{filesystem}/"  # file:/// is the root
    return f"{base}{PLANS_DIR}/{namespace}/{replica}/{run_id}.json"


def plan_digest(data: bytes) -> str:
    return f"{DIGEST_ALGORITHM}:{hashlib.sha256(data).hexdigest()}"


def check_digest(text: str) -> str:
    """`text` when it is a digest as plan_digest writes it; CopyInputError otherwise."""
    if not _DIGEST.fullmatch(text):
        raise CopyInputError(f"plan digest {text[:80]!r} is not {DIGEST_ALGORITHM}:<64 lower-case hex digits>")
    return text


def encode_plan(plan: CopyPlan) -> bytes:
    """The plan document's bytes, compact (a large plan is mostly URIs) and the same for the same plan."""
    return json.dumps(plan.to_dict(), separators=(",", ":"), ensure_ascii=False).encode()


def plan_source(text: str) -> Location:
    """`hivecat distcp --plan`: a URI (file://, s3://, hdfs://), or a local path as before URIs were taken."""
    if "://" not in text and not text.lower().startswith("file:"):
        return Location("file", "", local_path(text))  # read without following a link, as every local path
    return parse_uri(text, "--plan")


def write_plan(storage: Storage, location: str | Location, plan: CopyPlan) -> str:
    """Write `plan` at `location` whole (replacing a plan already there) and return its digest."""
    where = parse_uri(location, "plan location") if isinstance(location, str) else location
    for unit in plan.units:  # a commit replaces a unit's directory whole: a plan inside one would go with it
        for role, place in (("source", unit.source), ("target", unit.target)):
            if place.contains(where):
                raise CopyInputError(f"plan location {where.uri} is inside the {role} of unit {unit.id!r}")
    data = encode_plan(plan)
    if len(data) > MAX_PLAN_BYTES:
        raise CopyInputError(f"plan of {len(plan.units)} units takes {len(data)} bytes, over the "
                             f"{MAX_PLAN_BYTES} a copy run reads: split the replica's scope")
    fs = storage.filesystem(where)
    try:
        if where.is_object_store:  # no directories to make; the object appears when its upload completes
            with fs.open_output_stream(where.path) as out:
                out.write(data)
        else:
            _write_and_rename(fs, where, data)
    except OSError as exc:
        raise CopyInputError(f"cannot write plan {where.uri}: {exc}") from None
    return plan_digest(data)


def _write_and_rename(fs: pafs_types.FileSystem, where: Location, data: bytes) -> None:
    from pyarrow import fs as pafs

    fs.create_dir(where.parent.path, recursive=True)
    temporary = where.parent.child(f".{where.name}.{uuid.uuid4().hex}.tmp")
    try:
        with fs.open_output_stream(temporary.path) as out:
            out.write(data)
        if where.scheme == "hdfs" and fs.get_file_info(where.path).type != pafs.FileType.NotFound:
            # an HDFS rename never replaces its target. Rewriting a run's plan is rare (an operator pass
            # retried); for the moment between, readers find no plan and fail, never a wrong one.
            fs.delete_file(where.path)
        fs.move(temporary.path, where.path)  # POSIX rename: replaces atomically
    except BaseException:
        try:
            fs.delete_file(temporary.path)
        except OSError:
            pass  # never written, or already renamed
        raise


def read_plan(storage: Storage, location: str | Location, expected_digest: str | None = None) -> CopyPlan:
    """The plan at `location`, refused (CopyInputError) when missing, larger than MAX_PLAN_BYTES, not a valid
    plan, or, with `expected_digest`, not exactly the bytes of that digest."""
    where = parse_uri(location, "plan location") if isinstance(location, str) else location
    data = read_plan_bytes(storage, where)
    if expected_digest is not None:
        found = plan_digest(data)
        if found != check_digest(expected_digest):
            raise CopyInputError(f"plan {where.uri} is not the plan this run was given: its digest is {found}, "
                                 f"expected {expected_digest} (it was replaced or changed after it was written); "
                                 "nothing was copied")
    return plan_from_bytes(data, where.uri)


def read_plan_bytes(storage: Storage, where: Location) -> bytes:
    from pyarrow import fs as pafs

    fs = storage.filesystem(where)
    try:
        info = fs.get_file_info(where.path)
        if info.type == pafs.FileType.NotFound:
            raise CopyInputError(f"cannot read plan {where.uri}: no such file")
        if info.type != pafs.FileType.File:
            raise CopyInputError(f"cannot read plan {where.uri}: not a file")
        if info.size is not None and info.size > MAX_PLAN_BYTES:
            raise CopyInputError(_too_large(where, info.size))
        with fs.open_input_stream(where.path) as stream:
            data = _read_bounded(stream, info.size)
    except OSError as exc:
        raise CopyInputError(f"cannot read plan {where.uri}: {exc.strerror or exc}") from None
    if len(data) > MAX_PLAN_BYTES:
        raise CopyInputError(_too_large(where, len(data)))
    return bytes(data)


def _read_bounded(stream, measured: int | None) -> bytes:
    """At most MAX_PLAN_BYTES + 1 bytes: the size measured + 1 at once (+ 1 finds a file that grew since), the rest
    in chunks (a read of the bound itself reserves that much memory, whatever the file holds)."""
    data = stream.read(MAX_PLAN_BYTES + 1 if measured is None else min(measured + 1, MAX_PLAN_BYTES + 1))
    while len(data) <= MAX_PLAN_BYTES and (more := stream.read(min(_CHUNK, MAX_PLAN_BYTES + 1 - len(data)))):
        data += more
    return data


_CHUNK = 16 * 1024 * 1024


def _too_large(where: Location, size: int) -> str:
    return (f"plan {where.uri} is {size} bytes, over the {MAX_PLAN_BYTES} a plan may take: not a plan hivecat "
            "wrote")
