"""Bad input, as a new user types it, through the installed `hivecat` entry point: each case exits with its
documented code and says one clear line on stderr, never a traceback. Cases that would need a catalog point
at a closed port, so a message about the input (not about connecting) proves nothing was contacted."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

HIVECAT = Path(sys.executable).parent / "hivecat"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the socket is: nothing listens there


def hivecat(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HIVECAT), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


DB = f"mysql://hive@127.0.0.1:{closed_port()}/hms"
MOVE = ["--from", "hdfs://old-nn:8020/warehouse", "--to", "hdfs://new-nn:8020/warehouse"]


@pytest.mark.parametrize("args,code,message", [
    (["relocate", "--catalog", "mysql://u@127.0.0.1:notaport/db", *MOVE], 2,
     "the port must be a number from 1 to 65535, not 'notaport'"),
    (["relocate", "--catalog", f"thrift://127.0.0.1:{closed_port()}", *MOVE], 2,
     "cannot connect to the metastore at thrift://127.0.0.1:"),
    (["relocate", "--catalog", "thrift://hive:topsecret@127.0.0.1:9083", *MOVE], 2,
     "a metastore's Thrift API takes no user or password"),
    (["relocate", "--catalog", "mysql://hive:topsecret@db/hms", *MOVE], 2, "carries a password"),
    (["relocate", "--catalog", "glue://us-east-1", "--endpoint-url", f"http://127.0.0.1:{closed_port()}", *MOVE], 2,
     "cannot reach glue://us-east-1"),
    (["relocate", "--catalog", DB, "--from", "hdfs:/warehouse", "--to", "hdfs://nn:8020/warehouse"], 2,
     "invalid --from"),
    (["relocate", "--catalog", DB, "--from", "hdfs://nn:8020/w", "--to", "/tmp/w"], 2, "invalid --to"),
    (["relocate", "--catalog", DB, *MOVE, "--database", "d", "--table", "t", "--partition-filter", "dt ==== 1"], 2,
     "--partition-filter: expected a value"),
    (["relocate", "--catalog", DB, *MOVE, "--chunk-size", "0"], 2, "--chunk-size must be at least 1"),
    (["relocate", "--catalog", DB, "--from", "hdfs://nn:8020/w", "--to", "hdfs://nn:8020/w/x"], 3,
     "refused (overlap)"),
    (["relocate", "--catalog", DB, "--from", "hdfs://nn:8020/w", "--to", "s3://bucket/w"], 3,
     "refused (scheme-change)"),
    (["relocate", "--catalog", DB, "--from", "hdfs://nn:8020/w", "--to", "hdfs://nn2:8020/" + "w" * 4000], 3,
     "refused (too-long): a prefix of 4016 characters"),
    (["relocate", "--catalog", DB, *MOVE, "--password-file", "/nonexistent/pw"], 2, "cannot read --password-file"),
    (["relocate", "--catalog", DB, *MOVE], 2, "cannot connect to the metastore database mysql://127.0.0.1:"),
    (["relocate", "--catalog", "sqlite:///x.db", *MOVE], 2, "unsupported catalog 'sqlite'"),
])
def test_relocate_bad_input(args: list[str], code: int, message: str) -> None:
    done = hivecat(*args, env={"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"})
    assert done.returncode == code, done.stderr
    line = one_line_error(done)
    assert message in line and "topsecret" not in line


def test_scheme_change_refusal_says_how_to_allow_it() -> None:
    done = hivecat("relocate", "--catalog", DB, "--from", "hdfs://nn:8020/w", "--to", "s3://bucket/w")
    assert "--allow-scheme-change" in one_line_error(done)


def test_run_without_a_cluster_says_how_to_point_at_one(tmp_path: Path) -> None:
    done = hivecat("run", "--standalone", "-A", env={"KUBECONFIG": str(tmp_path / "missing"), "HOME": str(tmp_path)})
    assert done.returncode == 2
    assert "set KUBECONFIG" in one_line_error(done)


def test_run_with_a_leader_lease_it_cannot_take_says_so_in_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{closed_port()}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
current-context: c
""")
    env = {"KUBECONFIG": str(kubeconfig), "HIVECAT_LEADER_LEASE": "hivecat-leader"}
    done = hivecat("run", "--standalone", env={**env, "POD_NAMESPACE": ""})
    assert done.returncode == 2 and "HIVECAT_LEADER_LEASE needs POD_NAMESPACE" in one_line_error(done)
    done = hivecat("run", "--standalone", env={**env, "POD_NAMESPACE": "ops"})
    assert done.returncode == 1
    assert one_line_error(done).startswith("hivecat run: cannot take the leader lease ops/hivecat-leader: ")


def test_version() -> None:
    done = hivecat("--version")
    assert done.returncode == 0 and done.stdout.startswith("hivecat ")
