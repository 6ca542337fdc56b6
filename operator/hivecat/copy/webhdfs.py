"""hdfs:// through WebHDFS: the namenode's REST API, no Hadoop client or libhdfs on the copying machine.

An hdfs://host:port URI names the namenode's RPC address; WebHDFS listens on its HTTP address, which
HIVECAT_WEBHDFS_ENDPOINTS gives per authority, exactly as written in the URIs:
`HIVECAT_WEBHDFS_ENDPOINTS="nn1:8020=http://nn1:9870,nn2:8020=https://nn2:9871"`. An authority not
listed is reached at http://<its host>:9870 (Hadoop 3's default HTTP port). One address per authority:
no HA failover between namenodes. Datanodes are reached at the addresses the namenode redirects to,
so their host names must resolve on every copying machine.

Authentication is Kerberos or simple. With a Kerberos login (WebHdfsSettings.kerberos: a principal and its
keytab, or the ticket cache) every thread's session authenticates to the namenode with SPNEGO
(hivecat.kerberos.spnego) and then presents the namenode's `hadoop.auth` cookie until it expires; the namenode
redirects reads and writes to a datanode with a delegation token of its own in the URL, so datanodes need no
SPNEGO. Without a login, the user is HADOOP_USER_NAME (Hadoop's own convention), else this process's login user,
sent as `user.name`; a namenode that answers that with a Negotiate challenge is then tried once with the default
ticket cache, as `hdfs dfs` after kinit would. HTTPS endpoints are verified against WebHdfsSettings.ca_bundle
(PEM) when given, else the system's CAs. The settings hold no secret (a keytab is a path), so pickled to Spark
executors they travel as they are; executors need the keytab at the same path.

Renames are HDFS renames (one namenode operation, atomic) with Hadoop's rename options (`rename2`):
a target that exists is never replaced nor moved into, the rename fails (FileExistsError) instead.
Files are written with one streamed (chunked) PUT to the datanode the namenode chose. Directories are
listed a page at a time (LISTSTATUS_BATCH, Hadoop 2.8 and later).
"""

from __future__ import annotations

import errno
import os
import queue
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlparse

import pyarrow as pa
import requests
from pyarrow import fs as pafs
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from hivecat.copy.errors import AuthenticationFailed
from hivecat.copy.storage import WEBHDFS_CA_BUNDLE_ENV, WEBHDFS_ENDPOINTS_ENV, WebHdfsSettings
from hivecat.kerberos.errors import KerberosError
from hivecat.kerberos.login import KerberosLogin
from hivecat.kerberos.spnego import negotiate, service_principal

TIMEOUT = (10.0, 300.0)          # connect, read (a datanode may be slow to take a large block)
_REDIRECTS = (301, 302, 303, 307, 308)
_END = object()


# --- the REST client ------------------------------------------------------------------------------

_EXCEPTIONS: dict[str, type[OSError]] = {
    "FileNotFoundException": FileNotFoundError,
    "FileAlreadyExistsException": FileExistsError,
    "AccessControlException": PermissionError,
    "SecurityException": PermissionError,
    "ParentNotDirectoryException": NotADirectoryError,
}


def _raise_for(response: requests.Response, what: str) -> None:
    try:
        remote = response.json().get("RemoteException", {})
    except ValueError:
        remote = {}
    name, message = remote.get("exception", ""), remote.get("message") or response.reason
    if name == "PathIsNotEmptyDirectoryException":
        raise OSError(errno.ENOTEMPTY, f"{what}: {message}")
    error = _EXCEPTIONS.get(name) or (FileNotFoundError if response.status_code == 404 else OSError)
    raise error(f"{what}: {name + ': ' if name else ''}{message} (HTTP {response.status_code})")


AUTH_COOKIE = "hadoop.auth"  # Hadoop's AuthenticationFilter: the session's proof after one SPNEGO exchange


class WebHdfsClient:
    """The few WebHDFS operations the copy engine needs. Thread-safe: one HTTP session per thread."""

    def __init__(self, base_url: str, user: str | None, kerberos: KerberosLogin | None = None,
                 ca_bundle: str | None = None, http_principal: str | None = None) -> None:
        self.base_url = base_url
        self.user = user
        self.kerberos = kerberos
        self.verify: str | bool = ca_bundle or True  # per request: requests lets $REQUESTS_CA_BUNDLE beat a session's
        self.service = service_principal(http_principal, urlparse(base_url).hostname or "")
        self._local = threading.local()

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
            # reads only: a retried write or rename could act twice
            retry = Retry(total=3, connect=3, read=2, status=0, backoff_factor=0.3, allowed_methods={"GET"})
            adapter = HTTPAdapter(max_retries=retry, pool_maxsize=8)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
        return session

    def _url(self, path: str) -> str:
        return f"{self.base_url}/webhdfs/v1{quote(path, safe='/')}"

    def _authorization(self, session: requests.Session, login: KerberosLogin | None) -> dict[str, str]:
        if login is None or session.cookies.get(AUTH_COOKIE):
            return {}
        try:
            return {"Authorization": negotiate(login, self.service)}
        except KerberosError as exc:
            raise AuthenticationFailed(str(exc)) from None

    def request(self, method: str, op: str, path: str, *, redirect: bool = True, stream: bool = False,
                **params: Any) -> requests.Response:
        query = {"op": op, **params}
        if self.user and self.kerberos is None:
            query["user.name"] = self.user
        session = self._session()
        login = self.kerberos
        for attempt in (1, 2):
            try:
                response = session.request(method, self._url(path), params=query, allow_redirects=redirect,
                                            stream=stream, timeout=TIMEOUT, verify=self.verify,
                                            headers=self._authorization(session, login))
            except requests.exceptions.SSLError as exc:
                raise AuthenticationFailed(f"{op} {path}: the TLS certificate of {self.base_url} is not trusted "
                              f"({_ssl_reason(exc)}; see ${WEBHDFS_CA_BUNDLE_ENV})") from None
            except (requests.ConnectionError, requests.Timeout) as exc:  # requests' own text spans a screen
                raise OSError(f"{op} {path}: cannot reach WebHDFS at {self.base_url} ({type(exc).__name__}; "
                              f"see ${WEBHDFS_ENDPOINTS_ENV})") from None
            challenged = response.status_code == 401 and "negotiate" in \
                response.headers.get("WWW-Authenticate", "").lower()
            if not challenged or attempt == 2:
                break
            response.close()  # an expired cookie, or simple authentication refused: SPNEGO once
            session.cookies.clear()
            login = login or KerberosLogin()  # the default ticket cache, as `hdfs dfs` after kinit
            query.pop("user.name", None)
        if response.status_code == 401:
            response.close()
            who = login.describe() if login else f"user {self.user}"
            raise AuthenticationFailed(f"{op} {path}: the namenode at {self.base_url} did not accept {who} "
                                       f"(HTTP 401)")
        if response.status_code >= 400:
            try:
                _raise_for(response, f"{op} {path}")
            finally:
                response.close()
        return response

    def status(self, path: str) -> dict | None:
        try:
            return self.request("GET", "GETFILESTATUS", path).json()["FileStatus"]
        except FileNotFoundError:
            return None

    def list(self, path: str) -> Iterator[dict]:
        """A directory's entries, a page at a time (a large directory is never one response)."""
        after = ""
        while True:
            params = {"startAfter": after} if after else {}
            listing = self.request("GET", "LISTSTATUS_BATCH", path, **params).json()["DirectoryListing"]
            page = listing["partialListing"]["FileStatuses"]["FileStatus"]
            yield from page
            if not page or not listing.get("remainingEntries"):
                return
            after = page[-1]["pathSuffix"]

    def mkdirs(self, path: str) -> None:
        if not self.request("PUT", "MKDIRS", path).json().get("boolean"):
            raise OSError(f"MKDIRS {path}: the namenode refused to create the directory")

    def delete(self, path: str, recursive: bool) -> bool:
        return bool(self.request("DELETE", "DELETE", path, recursive=str(recursive).lower()).json().get("boolean"))

    def rename(self, source: str, target: str) -> None:
        """Atomic; never replaces nor moves into an existing `target` (FileExistsError)."""
        response = self.request("PUT", "RENAME", source, destination=target, renameoptions="NONE")
        body = response.content
        # rename2 answers with an empty body; a namenode that ignored the option answers with a boolean
        if body and not response.json().get("boolean", True):
            raise OSError(f"RENAME {source} to {target}: refused by the namenode (the target exists, or "
                          "the source or the target's parent is missing)")

    def data_location(self, method: str, op: str, path: str, **params: Any) -> str:
        """Step one of CREATE/OPEN: the datanode URL the namenode redirects to."""
        response = self.request(method, op, path, redirect=False, **params)
        location = response.headers.get("Location")
        if response.status_code not in _REDIRECTS or not location:
            try:  # noredirect=true, or a gateway that answers with the location in the body
                location = response.json()["Location"]
            except (ValueError, KeyError):
                raise OSError(f"{op} {path}: the namenode sent no datanode location "
                              f"(HTTP {response.status_code})") from None
        return location

    def put_data(self, location: str, chunks: Iterator[bytes], what: str) -> None:
        response = self._session().put(location, data=chunks, timeout=TIMEOUT, verify=self.verify,
                                       headers={"Content-Type": "application/octet-stream"})
        if response.status_code >= 300:
            _raise_for(response, what)

    def open(self, path: str, offset: int = 0, length: int | None = None) -> requests.Response:
        params: dict[str, Any] = {"offset": offset} if offset else {}
        if length is not None:
            params["length"] = length
        response = self.request("GET", "OPEN", path, stream=True, **params)
        response.raw.decode_content = True
        return response


# --- file objects (wrapped in pyarrow's PythonFile) -----------------------------------------------

class _Reader:
    """A file read front to back, as one streamed response."""

    def __init__(self, response: requests.Response) -> None:
        self._response = response
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            return self._response.raw.read()
        return self._response.raw.read(size)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._response.close()


class _RandomAccessReader:
    """Random access (pyarrow's open_input_file): each read is one ranged OPEN."""

    def __init__(self, client: WebHdfsClient, path: str, size: int) -> None:
        self._client, self._path, self._size, self._position = client, path, size, 0
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        left = self._size - self._position
        size = left if size is None or size < 0 else min(size, left)
        if size <= 0:
            return b""
        with self._client.open(self._path, self._position, size) as response:
            data = response.raw.read()
        self._position += len(data)
        return data

    def seek(self, position: int, whence: int = 0) -> int:
        base = (0, self._position, self._size)[whence]
        self._position = max(0, base + position)
        return self._position

    def tell(self) -> int:
        return self._position

    def size(self) -> int:
        return self._size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True


class _Writer:
    """One chunked PUT to the datanode, fed from write() through a small queue by a thread of its own:
    the file streams through, never held whole in memory or on local disk."""

    def __init__(self, client: WebHdfsClient, path: str) -> None:
        location = client.data_location("PUT", "CREATE", path, overwrite="true")
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=4)
        self._error: BaseException | None = None
        self.closed = False
        self._thread = threading.Thread(target=self._send, args=(client, location, path), daemon=True,
                                        name=f"webhdfs-put {path}")
        self._thread.start()

    def _chunks(self) -> Iterator[bytes]:
        while (chunk := self._queue.get()) is not _END:
            yield chunk

    def _send(self, client: WebHdfsClient, location: str, path: str) -> None:
        try:
            client.put_data(location, self._chunks(), f"CREATE {path}")
        except BaseException as exc:  # noqa: BLE001 - reported by write() or close()
            self._error = exc
            while self._queue.get() is not _END:  # unblock the writer until it closes
                pass

    def _put(self, item: Any) -> None:
        while True:
            if self._error is not None:
                raise self._error
            try:
                self._queue.put(item, timeout=1.0)
                return
            except queue.Full:
                if not self._thread.is_alive():
                    raise OSError("the WebHDFS upload stopped") from self._error

    def write(self, data: Any) -> int:
        chunk = bytes(memoryview(data))  # a copy: the caller may reuse its buffer
        if chunk:
            self._put(chunk)
        return len(chunk)

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._thread.is_alive():
            self._queue.put(_END)
        self._thread.join()
        if self._error is not None:
            raise self._error


# --- the pyarrow filesystem -----------------------------------------------------------------------

def _info(path: str, status: dict | None) -> pafs.FileInfo:
    if status is None:
        return pafs.FileInfo(path, pafs.FileType.NotFound)
    mtime_ns = int(status.get("modificationTime", 0)) * 1_000_000
    kind = status.get("type")
    if kind == "FILE":
        return pafs.FileInfo(path, pafs.FileType.File, mtime_ns=mtime_ns, size=int(status.get("length", 0)))
    if kind == "DIRECTORY":
        return pafs.FileInfo(path, pafs.FileType.Directory, mtime_ns=mtime_ns)
    return pafs.FileInfo(path, pafs.FileType.Unknown, mtime_ns=mtime_ns)  # a symlink: never followed


def _identity(client: WebHdfsClient) -> tuple:
    return client.base_url, client.user, client.kerberos, client.verify, client.service


def _ssl_reason(exc: BaseException) -> str:
    text = str(exc)
    for words in ("self-signed certificate", "unable to get local issuer certificate", "certificate has expired",
                  "Hostname mismatch", "doesn't match"):
        if words in text:
            return words
    return "certificate verify failed"


def _join(directory: str, name: str) -> str:
    return f"{directory.rstrip('/')}/{name}"


class WebHdfsHandler(pafs.FileSystemHandler):
    def __init__(self, client: WebHdfsClient) -> None:
        self.client = client

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WebHdfsHandler) and _identity(other.client) == _identity(self.client)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def equals(self, other: object) -> bool:
        return self == other

    def get_type_name(self) -> str:
        return "webhdfs"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return [_info(path, self.client.status(path)) for path in paths]

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        base = self.client.status(selector.base_dir)
        if base is None:
            if selector.allow_not_found:
                return []
            raise FileNotFoundError(f"{selector.base_dir}: no such directory")
        if base.get("type") != "DIRECTORY":
            raise NotADirectoryError(f"{selector.base_dir}: not a directory")
        found: list[pafs.FileInfo] = []
        pending = [selector.base_dir]
        while pending:
            directory = pending.pop()
            for status in self.client.list(directory):
                info = _info(_join(directory, status["pathSuffix"]), status)
                found.append(info)
                if selector.recursive and info.type == pafs.FileType.Directory:
                    pending.append(info.path)
        return found

    def create_dir(self, path: str, recursive: bool) -> None:
        if not recursive:
            parent = self.client.status(os.path.dirname(path.rstrip("/")) or "/")
            if parent is None or parent.get("type") != "DIRECTORY":
                raise FileNotFoundError(f"{path}: the parent directory does not exist")
        self.client.mkdirs(path)

    def delete_dir(self, path: str) -> None:
        status = self.client.status(path)
        if status is None or status.get("type") != "DIRECTORY":
            raise (FileNotFoundError if status is None else NotADirectoryError)(f"{path}: not a directory")
        if not self.client.delete(path, recursive=True):
            raise OSError(f"DELETE {path}: the namenode did not delete it")

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        if path.strip("/") == "":
            self.delete_root_dir_contents()
        if self.client.status(path) is None:
            if missing_dir_ok:
                return
            raise FileNotFoundError(f"{path}: no such directory")
        for status in list(self.client.list(path)):
            self.client.delete(_join(path, status["pathSuffix"]), recursive=True)

    def delete_root_dir_contents(self) -> None:
        raise PermissionError("refusing to delete everything in an HDFS namespace")

    def delete_file(self, path: str) -> None:
        status = self.client.status(path)
        if status is None or status.get("type") == "DIRECTORY":
            raise (FileNotFoundError if status is None else IsADirectoryError)(f"{path}: not a file")
        self.client.delete(path, recursive=False)

    def move(self, src: str, dest: str) -> None:
        self.client.rename(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        with self.open_input_stream(src) as reader, self.open_output_stream(dest, None) as writer:
            while chunk := reader.read(4 * 1024 * 1024):
                writer.write(chunk)

    def open_input_stream(self, path: str) -> Any:
        return pa.PythonFile(_Reader(self.client.open(path)), mode="r")

    def open_input_file(self, path: str) -> Any:
        status = self.client.status(path)
        if status is None or status.get("type") != "FILE":
            raise (FileNotFoundError if status is None else IsADirectoryError)(f"{path}: not a file")
        return pa.PythonFile(_RandomAccessReader(self.client, path, int(status["length"])), mode="r")

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        return pa.PythonFile(_Writer(self.client, path), mode="w")

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        raise NotImplementedError("appending is not used by the copy engine")


def filesystem(settings: WebHdfsSettings, authority: str) -> pafs.FileSystem:
    """The pyarrow filesystem of the namenode at `authority` (hdfs://authority/...)."""
    return pafs.PyFileSystem(WebHdfsHandler(WebHdfsClient(settings.endpoint(authority), settings.user,
                                                          settings.kerberos, settings.ca_bundle,
                                                          settings.http_principal)))
