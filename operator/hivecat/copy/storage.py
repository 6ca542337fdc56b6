"""Where data lives: URIs parsed into locations, and the pyarrow filesystem behind each.

Schemes: local paths and file://, s3:// (also s3a://, s3n://), hdfs://. HDFS goes through pyarrow's
HadoopFileSystem, which needs libhdfs and a Hadoop client (CLASSPATH, HADOOP_HOME) on every machine
that copies; it sits behind the same interface but is not tested here (no HDFS on the test machine).

S3 settings come from the environment, never from the command line: endpoint from
HIVECAT_S3_ENDPOINT, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (with an endpoint override, addressing is
path-style, as test servers and most on-premise stores need); credentials from the files in
HIVECAT_S3_CREDENTIALS_DIR (a mounted Kubernetes Secret: `access-key-id`, `secret-access-key`,
optional `session-token`), else AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else
the default AWS chain. Credentials are kept out of reprs so they never reach logs.
"""

from __future__ import annotations

import functools
import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from hivecat.copy.errors import CopyInputError

if TYPE_CHECKING:
    from pyarrow import fs as pafs

CREDENTIALS_DIR_ENV = "HIVECAT_S3_CREDENTIALS_DIR"
ENDPOINT_ENVS = ("HIVECAT_S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
S3_SCHEMES = ("s3", "s3a", "s3n")


@dataclass(frozen=True)
class S3Settings:
    endpoint: str | None = None   # e.g. http://127.0.0.1:9000; None: AWS
    region: str = "us-east-1"
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> S3Settings:
        endpoint = next((environ[k] for k in ENDPOINT_ENVS if environ.get(k)), None)
        region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        access, secret, token = (environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY"),
                                 environ.get("AWS_SESSION_TOKEN"))
        if environ.get(CREDENTIALS_DIR_ENV):
            access, secret, token = _read_credentials_dir(Path(environ[CREDENTIALS_DIR_ENV]))
        return cls(endpoint, region, access, secret, token)

    def filesystem(self) -> pafs.S3FileSystem:
        from pyarrow import fs as pafs  # here, not at the top: the CLI reads this module's names at startup

        options: dict[str, object] = {"region": self.region}
        if self.endpoint:
            parsed = urlparse(self.endpoint)
            options.update(endpoint_override=parsed.netloc or parsed.path, scheme=parsed.scheme or "https",
                           force_virtual_addressing=False)
        if self.access_key:
            options.update(access_key=self.access_key, secret_key=self.secret_key,
                           session_token=self.session_token)
        return pafs.S3FileSystem(**options)

    def client(self):
        """A boto3 S3 client with the same endpoint and credentials (for server-side copies)."""
        import boto3
        from botocore.config import Config

        config = Config(s3={"addressing_style": "path"} if self.endpoint else {},
                        retries={"max_attempts": 5, "mode": "standard"})
        return boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, region_name=self.region, config=config,
            aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key,
            aws_session_token=self.session_token)


def _read_credentials_dir(directory: Path) -> tuple[str, str, str | None]:
    def read(name: str, required: bool) -> str | None:
        try:
            return (directory / name).read_text().strip()
        except FileNotFoundError:
            if required:
                raise CopyInputError(f"S3 credentials: {directory / name} is missing "
                                     f"(${CREDENTIALS_DIR_ENV} must hold access-key-id and secret-access-key)") from None
            return None
        except OSError as exc:
            raise CopyInputError(f"S3 credentials: cannot read {directory / name}: {exc.strerror}") from None

    return read("access-key-id", True), read("secret-access-key", True), read("session-token", False)


@dataclass(frozen=True)
class Location:
    """A directory or file: its scheme, authority (bucket, namenode) and the path pyarrow uses."""

    scheme: str      # "file" | "s3" | "hdfs"
    authority: str   # "" for file; host:port for hdfs; the bucket for s3 (also the head of `path`)
    path: str        # pyarrow path: "/abs/dir" (file, hdfs) or "bucket/key/prefix" (s3)

    @property
    def uri(self) -> str:
        if self.scheme == "file":  # literal, as Hadoop paths are: Hive's own %XX escapes stay as they are
            return f"file://{self.path}"
        if self.scheme == "s3":
            return f"s3://{self.path}"
        return f"{self.scheme}://{self.authority}{self.path}"

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/"))

    @property
    def parent(self) -> Location:
        return Location(self.scheme, self.authority, posixpath.dirname(self.path.rstrip("/")))

    @property
    def is_object_store(self) -> bool:
        return self.scheme == "s3"

    def child(self, relative: str) -> Location:
        return Location(self.scheme, self.authority, posixpath.join(self.path, relative))

    def contains(self, other: Location) -> bool:
        """True when `other` is this location or lies below it (same filesystem)."""
        if (self.scheme, self.authority) != (other.scheme, other.authority):
            return False
        return other.path == self.path or other.path.startswith(self.path.rstrip("/") + "/")

    def relative(self, other_path: str) -> str:
        return other_path[len(self.path.rstrip("/")) + 1:]


def parse_uri(uri: str) -> Location:
    parsed = urlparse(uri)
    scheme = parsed.scheme.lower()
    if scheme in ("", "file"):
        raw = parsed.path if scheme == "file" else uri
        if not raw:
            raise CopyInputError(f"{uri!r}: no path")
        return Location("file", "", os.path.realpath(raw))  # realpath: symlinks cannot hide an overlap
    if scheme in S3_SCHEMES:
        key = posixpath.normpath(parsed.path).strip("/") if parsed.path.strip("/") else ""
        if not parsed.netloc:
            raise CopyInputError(f"{uri!r}: no bucket")
        if not key:
            raise CopyInputError(f"{uri!r}: copy into and from prefixes, not whole buckets")
        return Location("s3", parsed.netloc, f"{parsed.netloc}/{key}")
    if scheme == "hdfs":
        if not parsed.netloc:
            raise CopyInputError(f"{uri!r}: hdfs URIs need the namenode, hdfs://host:port/path")
        return Location("hdfs", parsed.netloc, posixpath.normpath(parsed.path or "/"))
    raise CopyInputError(f"{uri!r}: unsupported scheme {scheme!r} (use a local path, file://, s3:// or hdfs://)")


@dataclass(frozen=True)
class Storage:
    """Builds (and caches, per process) the filesystem of each location. Picklable: Spark
    executors receive it and rebuild their own filesystems."""

    s3: S3Settings = S3Settings()

    def filesystem(self, location: Location) -> pafs.FileSystem:
        return _filesystem(self.s3, location.scheme, location.authority)

    def s3_client(self):
        return _s3_client(self.s3)


@functools.lru_cache(maxsize=16)
def _filesystem(s3: S3Settings, scheme: str, authority: str) -> pafs.FileSystem:
    from pyarrow import fs as pafs

    if scheme == "file":
        return pafs.LocalFileSystem()
    if scheme == "s3":
        return s3.filesystem()
    host, _, port = authority.partition(":")
    try:
        return pafs.HadoopFileSystem(host, int(port or 8020))
    except OSError as exc:  # no libhdfs / JVM client on this machine
        raise CopyInputError(f"hdfs://{authority}: cannot connect through libhdfs: {exc}") from None


@functools.lru_cache(maxsize=4)
def _s3_client(s3: S3Settings):
    return s3.client()
