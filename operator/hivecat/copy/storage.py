"""Where data lives: URIs parsed into locations, and the pyarrow filesystem behind each.

Schemes (the table is hivecat.locations.schemes, shared with `hivecat relocate`): file://, s3:// (also
s3a://, s3n://), hdfs://. URIs only: a bare path (`/tmp/x`) is refused in the same words as `hivecat
relocate` refuses it, naming the URI to write instead (file:///tmp/x). A file: path is taken literally,
as Hadoop takes it: no query or fragment, no %XX decoding, no link resolved (local_path); file:// data is
reached through localfs.py, which refuses a path that is or passes through a symbolic link. HDFS goes
through WebHDFS, the namenode's REST API (webhdfs.py: no Hadoop client or libhdfs needed), as a Kerberos
login (SPNEGO: HIVECAT_KERBEROS_PRINCIPAL and HIVECAT_KERBEROS_KEYTAB, or the ticket cache) or with simple
authentication (the user from HADOOP_USER_NAME); the namenode's HTTP address per hdfs:// authority comes from
HIVECAT_WEBHDFS_ENDPOINTS (default: port 9870 on the namenode's host).
Renames there are atomic HDFS renames that never replace an existing target. Tested against a real
namenode (Hadoop 3.4.1 MiniDFSCluster).

S3 settings come from the environment, never from the command line: endpoint from
HIVECAT_S3_ENDPOINT, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (with an endpoint override, addressing is
path-style, as test servers and most on-premise stores need); credentials from the files in
HIVECAT_S3_CREDENTIALS_DIR (a mounted Kubernetes Secret: `access-key-id`, `secret-access-key`,
optional `session-token`), else AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else
the default AWS chain. Credentials are kept out of reprs so they never reach logs.

WebHDFS settings are read from the environment too (when the Storage is made) and hold no secret;
they travel to Spark executors as they are.

Credentials never travel. Spark executors get the Storage pickled (engines.py), and pickled
S3Settings carry a reference instead of keys: the HIVECAT_S3_CREDENTIALS_DIR path, or the note that
the keys came from the AWS variables. Each executor reads the keys itself as it unpickles them, so it
needs the same Secret mounted at the same path, or the same AWS_* variables (spark.executorEnv.*);
it refuses to start its copies without them rather than fall back to other credentials. Keys given
in code (not from the environment) are resolved from the executor's AWS variables alike.

Spark's own RPC encryption (`spark.network.crypto.enabled`, which needs `spark.authenticate` and its
shared secret) would add, on top of that, authentication of executors and encryption of everything
that crosses the network between driver and executors: the task closures (file paths, endpoint,
bucket names), the results (checksums, ETags) and any other data Spark moves. It is worth enabling
where that traffic leaves a trusted network; hivecat no longer depends on it to protect credentials,
which are not in that traffic. The copied bytes go from source to target storage directly, never
through the driver: in transit they are protected by the stores' TLS (an https endpoint).
"""

from __future__ import annotations

import functools
import getpass
import os
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from hivecat.copy.errors import CopyInputError
from hivecat.kerberos.login import KerberosLogin
from hivecat.locations.schemes import COPY_SCHEMES, SCHEME_PREFIX, bare_path_refusal, copy_family

if TYPE_CHECKING:
    from pyarrow import fs as pafs

CREDENTIALS_DIR_ENV = "HIVECAT_S3_CREDENTIALS_DIR"
ENDPOINT_ENVS = ("HIVECAT_S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
WEBHDFS_ENDPOINTS_ENV = "HIVECAT_WEBHDFS_ENDPOINTS"
HADOOP_USER_ENV = "HADOOP_USER_NAME"
WEBHDFS_DEFAULT_PORT = 9870  # Hadoop 3's namenode HTTP port
WEBHDFS_CA_BUNDLE_ENV = "HIVECAT_WEBHDFS_CA_BUNDLE"  # PEM: the CA of the namenodes' and datanodes' HTTPS
WEBHDFS_PRINCIPAL_ENV = "HIVECAT_WEBHDFS_PRINCIPAL"  # dfs.web.authentication.kerberos.principal, e.g. HTTP/_HOST@R


@dataclass(frozen=True)
class S3Settings:
    endpoint: str | None = None   # e.g. http://127.0.0.1:9000; None: AWS
    region: str = "us-east-1"
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    credentials_dir: str | None = None  # where the keys were read: a path, not a secret

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> S3Settings:
        endpoint = next((environ[k] for k in ENDPOINT_ENVS if environ.get(k)), None)
        region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        credentials_dir = environ.get(CREDENTIALS_DIR_ENV) or None
        if credentials_dir:
            access, secret, token = _read_credentials_dir(Path(credentials_dir))
        else:
            access, secret, token = _environment_keys(environ)
        return cls(endpoint, region, access, secret, token, credentials_dir)

    def __reduce__(self):
        """Pickled as a reference to the credentials, never the keys (see the module docstring)."""
        return _resolved_here, (self.endpoint, self.region, self.credentials_dir, self.access_key is not None)

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
        # delayed open: a small object goes up in one PutObject, not a 3-request multipart upload; an open's errors
        # then surface at the write or the close, inside the same `with` that handles them
        return pafs.S3FileSystem(**options, allow_delayed_open=True)

    def client(self):
        """An S3 client with the same endpoint and credentials (for server-side copies), shared (hivecat.aws)."""
        from hivecat import aws

        return aws.client("s3", self.region, self.endpoint, (self.access_key, self.secret_key, self.session_token),
                          # units commit side by side, each with parallel copies (Copier): up to 8 x 8 at once
                          aws.ClientSettings(attempts=6, path_style=bool(self.endpoint), connections=64))


def _environment_keys(environ: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    return environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY"), environ.get("AWS_SESSION_TOKEN")


def _resolved_here(endpoint: str | None, region: str, credentials_dir: str | None, keyed: bool) -> S3Settings:
    """S3Settings unpickled (on a Spark executor): the keys read again where they were read before."""
    if credentials_dir:
        access, secret, token = _read_credentials_dir(Path(credentials_dir))
    elif keyed:
        access, secret, token = _environment_keys(os.environ)
        if not access:
            raise CopyInputError("S3 credentials: AWS_ACCESS_KEY_ID is not set in this process (an executor "
                                 "needs the driver's AWS variables, or $" + CREDENTIALS_DIR_ENV + ")")
    else:  # the default AWS chain, here as on the driver
        access = secret = token = None
    return S3Settings(endpoint, region, access, secret, token, credentials_dir)


# Each key's file names in a mounted Secret: hivecat's own, or the AWS variable names a ClusterStorage's
# credentials Secret holds (its CRD documents those), so one Secret serves env vars and files alike.
_CREDENTIAL_FILES = {"access-key-id": ("access-key-id", "AWS_ACCESS_KEY_ID"),
                     "secret-access-key": ("secret-access-key", "AWS_SECRET_ACCESS_KEY"),
                     "session-token": ("session-token", "AWS_SESSION_TOKEN")}


def _read_credentials_dir(directory: Path) -> tuple[str, str, str | None]:
    def read(key: str, required: bool) -> str | None:
        for name in _CREDENTIAL_FILES[key]:
            try:
                return (directory / name).read_text().strip()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise CopyInputError(f"S3 credentials: cannot read {directory / name}: {exc.strerror}") from None
        if required:
            raise CopyInputError(f"S3 credentials: {directory / key} is missing (${CREDENTIALS_DIR_ENV} must hold "
                                 "access-key-id and secret-access-key, or AWS_ACCESS_KEY_ID and "
                                 "AWS_SECRET_ACCESS_KEY)")
        return None

    return read("access-key-id", True), read("secret-access-key", True), read("session-token", False)


@dataclass(frozen=True)
class WebHdfsSettings:
    """Where each namenode's WebHDFS listens, and who we are there (see webhdfs.py)."""

    endpoints: tuple[tuple[str, str], ...] = ()  # (authority as in the URIs, http(s)://host:port)
    user: str | None = None                       # simple authentication's user.name (no Kerberos login)
    kerberos: KerberosLogin | None = None         # SPNEGO as this login (paths and names only, no key)
    ca_bundle: str | None = None                  # PEM file the namenodes' and datanodes' TLS certificates chain to
    http_principal: str | None = None             # the namenodes' SPNEGO principal, HTTP/_HOST@REALM; None: HTTP@host

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> WebHdfsSettings:
        """Read the environment; a malformed mapping is refused when first used (endpoint), so that
        runs that touch no HDFS never fail on it."""
        raw = environ.get(WEBHDFS_ENDPOINTS_ENV, "")
        pairs = tuple((k.strip(), v.strip()) for k, _, v in (item.partition("=") for item in raw.split(","))
                      if k.strip() or v.strip())
        return cls(pairs, environ.get(HADOOP_USER_ENV) or _login_user(), KerberosLogin.from_environment(environ),
                   environ.get(WEBHDFS_CA_BUNDLE_ENV) or None, environ.get(WEBHDFS_PRINCIPAL_ENV) or None)

    def endpoint(self, authority: str) -> str:
        """The WebHDFS base URL (scheme://host:port, no path) of the namenode at `authority`."""
        for key, url in self.endpoints:
            if not key or not url:
                raise CopyInputError(f"${WEBHDFS_ENDPOINTS_ENV}: expected authority=url pairs separated by commas, "
                                     f"e.g. nn:8020=http://nn:9870 (found {key or '?'}={url or '?'})")
        for key, url in self.endpoints:
            if key.lower() == authority.lower():
                return _checked_url(key, url)
        parsed = urlparse(f"//{authority}")
        try:
            host, _ = parsed.hostname, parsed.port
        except ValueError:
            raise CopyInputError(f"hdfs://{authority}: bad namenode port") from None
        if not host:
            raise CopyInputError(f"hdfs://{authority}: no namenode host")
        host = f"[{host}]" if ":" in host else host  # IPv6
        return f"http://{host}:{WEBHDFS_DEFAULT_PORT}"


def _login_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers): the namenode's static user
        return None


def _checked_url(key: str, url: str) -> str:
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise CopyInputError(f"${WEBHDFS_ENDPOINTS_ENV}: {key}={url} is not an http(s)://host:port address")
    if parsed.path.strip("/") or parsed.query or parsed.fragment:
        raise CopyInputError(f"${WEBHDFS_ENDPOINTS_ENV}: {key}={url}: give the namenode's HTTP address only "
                             "(scheme://host:port), /webhdfs/v1 is added")
    try:
        parsed.port
    except ValueError:
        raise CopyInputError(f"${WEBHDFS_ENDPOINTS_ENV}: {key}={url}: bad port") from None
    return f"{parsed.scheme}://{parsed.netloc}"


@dataclass(frozen=True, slots=True)  # slots: a plan holds two a unit, 100,000 units and more
class Location:
    """A directory or file: its scheme, authority (bucket, namenode) and the path pyarrow uses."""

    scheme: str      # the scheme's family: "file" | "s3" | "hdfs" (locations.schemes.copy_family)
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
        # Appended, not posixpath.join'ed: join would jump to an absolute `relative` (an S3 key's
        # remainder after `t//`). Remainders that are not paths inside the unit are refused before
        # they are read or written (relative_path_refusal).
        return Location(self.scheme, self.authority, f"{self.path.rstrip('/')}/{relative}")

    def contains(self, other: Location) -> bool:
        """True when `other` is this location or lies below it (same filesystem)."""
        if (self.scheme, self.authority) != (other.scheme, other.authority):
            return False
        return other.path == self.path or other.path.startswith(self.path.rstrip("/") + "/")

    def relative(self, other_path: str) -> str:
        return other_path[len(self.path.rstrip("/")) + 1:]


def relative_path_refusal(relative: str) -> str | None:
    """Why a listed file's path below its unit is not a path inside the unit; None when it is.

    Object-store keys are names, not paths: `t//tmp/x`, `t/./x` and `t/a/../../x` are keys below
    `t/` whose remainders, joined to a directory, name an absolute path, an alias or a parent. They
    are refused, never normalised: the normal form would read another object, or two keys would
    land on one file."""
    if "\0" in relative or any(segment in ("", ".", "..") for segment in relative.split("/")):
        return "does not name a file inside the unit (an empty, '.' or '..' path segment)"
    return None


def local_path(text: str) -> str:
    """A local path made absolute and normalised lexically ('.', '..', repeated slashes), never by resolving
    links: the path given is the path used. Every local access refuses a path through a link (local_paths.py),
    so a link cannot hide an overlap either: a target named through a link to its source is refused when used."""
    path = os.path.abspath(text)
    return "/" + path.lstrip("/")  # normpath keeps a leading "//" (POSIX leaves it implementation-defined)


_SUPPORTED = ", ".join(f"{name}://" for name in COPY_SCHEMES[:-1]) + f" or {COPY_SCHEMES[-1]}://"


_CONTROL = re.compile("[\x00-\x1f]")


def parse_uri(uri: str, role: str = "") -> Location:
    """The location of a URI; `role` (e.g. "--from") starts every refusal's message."""
    label = f"{role} {uri!r}" if role else repr(uri)
    refusal = bare_path_refusal(uri)
    if refusal is not None:
        raise CopyInputError(f"{role} {refusal}" if role else refusal)
    control = _CONTROL.search(uri)
    if control is not None:  # no path holds NUL; Hive writes the others %XX-escaped (and plan.py sorts on two)
        raise CopyInputError(f"{label}: a control character (U+{ord(control.group()):04X}) in the URI")
    leading = SCHEME_PREFIX.match(uri)  # the scheme urlparse finds, where it finds one: file: URIs need no more of it
    if leading is not None and copy_family(leading.group(1)) == "file":
        scheme, family, parsed = leading.group(1).lower(), "file", None
    else:
        parsed = urlparse(uri)
        scheme = parsed.scheme.lower()
        family = copy_family(scheme) if scheme else None
    if family == "file":
        # literal: urlparse would cut the path at '?' or '#' and copy another directory
        rest = uri[len(scheme) + 1:]
        if rest.startswith("//"):
            end = rest.find("/", 2)
            rest = rest[end:] if end >= 0 else ""
        if not rest:
            raise CopyInputError(f"{label}: no path")
        return Location("file", "", local_path(rest))
    if family == "s3":
        key = posixpath.normpath(parsed.path).strip("/") if parsed.path.strip("/") else ""
        if not parsed.netloc:
            raise CopyInputError(f"{label}: no bucket")
        if not key:
            raise CopyInputError(f"{label}: copy into and from prefixes, not whole buckets")
        return Location("s3", parsed.netloc, f"{parsed.netloc}/{key}")
    if family == "hdfs":
        if not parsed.netloc:
            raise CopyInputError(f"{label}: hdfs URIs need the namenode, hdfs://host:port/path")
        # normpath keeps a leading "//" (POSIX leaves it implementation-defined); HDFS does not
        return Location("hdfs", parsed.netloc, "/" + posixpath.normpath(parsed.path or "/").lstrip("/"))
    if not scheme:
        raise CopyInputError(f"{label}: no URI scheme (use {_SUPPORTED})")
    raise CopyInputError(f"{label}: unsupported scheme {scheme!r} (use {_SUPPORTED})")


@dataclass(frozen=True)
class Storage:
    """Builds (and caches, per process) the filesystem of each location. Picklable: Spark
    executors receive it and rebuild their own filesystems."""

    s3: S3Settings = S3Settings()
    webhdfs: WebHdfsSettings = field(default_factory=WebHdfsSettings.from_environment)

    def filesystem(self, location: Location) -> pafs.FileSystem:
        return _filesystem(self.s3, self.webhdfs, location.scheme, location.authority)

    def s3_client(self):
        return self.s3.client()


@functools.lru_cache(maxsize=16)
def _filesystem(s3: S3Settings, webhdfs: WebHdfsSettings, scheme: str, authority: str) -> pafs.FileSystem:
    from pyarrow import fs as pafs

    if scheme == "file":  # never pyarrow's LocalFileSystem, which follows links
        from hivecat.copy import localfs

        return localfs.filesystem()
    if scheme == "s3":
        return s3.filesystem()
    from hivecat.copy import webhdfs as webhdfs_fs  # here: requests and pyarrow load only when HDFS is used

    return webhdfs_fs.filesystem(webhdfs, authority)
