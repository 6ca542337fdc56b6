"""hdfs:// through WebHDFS without a namenode: the endpoint mapping, the user, pickling, error mapping."""

from __future__ import annotations

import json
import pickle
import socket
from pathlib import Path

import pytest
import requests
from support.copy_trees import uri, write_tree

from hivecat import cli
from hivecat.copy import webhdfs
from hivecat.copy.errors import CopyInputError
from hivecat.copy.storage import Storage, WebHdfsSettings, parse_uri


def settings(endpoints: str = "", user: str | None = None) -> WebHdfsSettings:
    environ = {"HIVECAT_WEBHDFS_ENDPOINTS": endpoints} if endpoints else {}
    if user:
        environ["HADOOP_USER_NAME"] = user
    return WebHdfsSettings.from_environment(environ)


@pytest.mark.parametrize(("authority", "url"), [
    ("nn:8020", "http://nn:9870"),
    ("nn", "http://nn:9870"),
    ("10.0.0.5:9000", "http://10.0.0.5:9870"),
    ("[::1]:8020", "http://[::1]:9870"),
])
def test_unlisted_authorities_default_to_port_9870_on_the_same_host(authority: str, url: str) -> None:
    assert settings().endpoint(authority) == url


def test_listed_authorities_map_to_their_http_address() -> None:
    mapped = settings(" nn1:8020=http://nn1:50070 , NN2:8020=https://web.example:9871/,nn3=http://nn3:1")
    assert mapped.endpoint("nn1:8020") == "http://nn1:50070"
    assert mapped.endpoint("nn2:8020") == "https://web.example:9871"  # hosts are case-insensitive
    assert mapped.endpoint("nn3") == "http://nn3:1"
    assert mapped.endpoint("nn3:8020") == "http://nn3:9870"  # the authority exactly as in the URIs
    assert mapped.endpoint("nn1:9000") == "http://nn1:9870"


@pytest.mark.parametrize("endpoints", [
    "nn:8020", "nn:8020=", "=http://nn:9870", "nn:8020=ftp://nn:21", "nn:8020=nn:9870",
    "nn:8020=http://nn:9870/webhdfs/v1", "nn:8020=http://nn:port", "nn:8020=http://nn:9870?x=1",
])
def test_malformed_mappings_are_refused_in_one_line_when_used(endpoints: str) -> None:
    mapped = settings(endpoints)  # read without complaint: runs without HDFS never trip on it
    with pytest.raises(CopyInputError, match=r"^\$HIVECAT_WEBHDFS_ENDPOINTS: ") as caught:
        mapped.endpoint("nn:8020")
    assert "\n" not in str(caught.value)


def test_bad_authorities_are_refused() -> None:
    with pytest.raises(CopyInputError, match="bad namenode port"):
        settings().endpoint("nn:http")


def test_user_is_hadoop_user_name_else_the_login_user(monkeypatch: pytest.MonkeyPatch) -> None:
    assert settings(user="etl").user == "etl"
    monkeypatch.setattr("getpass.getuser", lambda: "someone")
    assert settings().user == "someone"


def test_storage_reads_the_environment_and_pickles_it_as_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIVECAT_WEBHDFS_ENDPOINTS", "nn:8020=http://web:1234")
    monkeypatch.setenv("HADOOP_USER_NAME", "etl")
    storage = Storage()
    monkeypatch.setenv("HIVECAT_WEBHDFS_ENDPOINTS", "nn:8020=http://elsewhere:1")  # an executor's own
    again = pickle.loads(pickle.dumps(storage))
    assert again == storage and again.webhdfs.endpoint("nn:8020") == "http://web:1234"
    handler = again.filesystem(parse_uri("hdfs://nn:8020/warehouse")).handler  # no request made
    assert (handler.client.base_url, handler.client.user) == ("http://web:1234", "etl")


def response(status: int, body: object = None) -> requests.Response:
    made = requests.Response()
    made.status_code, made.reason = status, "Reason"
    made._content = json.dumps(body).encode() if body is not None else b""
    return made


@pytest.mark.parametrize(("exception", "error"), [
    ("FileNotFoundException", FileNotFoundError), ("FileAlreadyExistsException", FileExistsError),
    ("AccessControlException", PermissionError), ("ParentNotDirectoryException", NotADirectoryError),
    ("IOException", OSError),
])
def test_remote_exceptions_become_python_errors(exception: str, error: type[OSError]) -> None:
    remote = {"RemoteException": {"exception": exception, "message": "it went wrong"}}
    with pytest.raises(error, match="RENAME /a: .*it went wrong"):
        webhdfs._raise_for(response(403, remote), "RENAME /a")


def test_a_rename_the_namenode_answers_false_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    client = webhdfs.WebHdfsClient("http://nn:9870", "etl")
    sent: list[dict] = []
    answers = [response(200), response(200, {"boolean": False})]

    def request(method: str, op: str, path: str, **params: object) -> requests.Response:
        sent.append({"method": method, "op": op, "path": path, **params})
        return answers.pop(0)

    monkeypatch.setattr(client, "request", request)
    client.rename("/a", "/b")  # rename2: an empty answer is success
    with pytest.raises(OSError, match="refused by the namenode"):
        client.rename("/a", "/b")  # a namenode that ignored renameoptions said false
    assert sent[0] == {"method": "PUT", "op": "RENAME", "path": "/a", "destination": "/b", "renameoptions": "NONE"}


def test_paths_are_percent_encoded_literally() -> None:
    client = webhdfs.WebHdfsClient("http://nn:9870", None)
    assert client._url("/t/dt=1%3A00/a b;c#d") == "http://nn:9870/webhdfs/v1/t/dt%3D1%253A00/a%20b%3Bc%23d"


def test_a_failed_upload_fails_the_write_not_silently(monkeypatch: pytest.MonkeyPatch) -> None:
    client = webhdfs.WebHdfsClient("http://nn:9870", None)
    monkeypatch.setattr(client, "data_location", lambda *a, **k: "http://dn:9864/x")

    def put_data(location: str, chunks, what: str) -> None:
        next(chunks)
        raise OSError("datanode went away")

    monkeypatch.setattr(client, "put_data", put_data)
    stream = webhdfs.WebHdfsHandler(client).open_output_stream("/x", None)
    with pytest.raises(OSError, match="datanode went away"):
        for _ in range(100):
            stream.write(b"x" * 1024)
        stream.close()


def test_refuses_to_empty_a_whole_namespace() -> None:
    handler = webhdfs.WebHdfsHandler(webhdfs.WebHdfsClient("http://nn:9870", None))
    with pytest.raises(PermissionError):
        handler.delete_root_dir_contents()
    with pytest.raises(PermissionError):
        handler.delete_dir_contents("/")


def test_cli_bad_mapping_and_unreachable_namenode_are_one_line_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    write_tree(tmp_path / "src", {"a": b"1"})
    monkeypatch.setenv("HIVECAT_WEBHDFS_ENDPOINTS", "127.0.0.1:8020=ftp://x")
    assert cli.main(["distcp", "--from", uri(tmp_path / "src"), "--to", "hdfs://127.0.0.1:8020/t"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hivecat distcp: $HIVECAT_WEBHDFS_ENDPOINTS: ") and "\n" not in err

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("HIVECAT_WEBHDFS_ENDPOINTS", f"127.0.0.1:8020=http://127.0.0.1:{port}")
    assert cli.main(["distcp", "--from", uri(tmp_path / "src"), "--to", "hdfs://127.0.0.1:8020/t"]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot reach WebHDFS at http://127.0.0.1:" in err and "\n" not in err
