"""A real MIT Kerberos KDC (Debian's krb5-kdc), one per pytest session, with principals and keytabs made on it.

`scripts/setup-system.sh` installs krb5-kdc, krb5-admin-server (kadmin.local) and krb5-user. The KDC runs in the
foreground as a child process over a database in a directory of its own (kdb5_util create), on a free
127.0.0.1 port, for one realm, HIVECAT.TEST. Nothing of the machine's own Kerberos configuration is read or
written: every child gets KRB5_CONFIG (clients) and KRB5_KDC_PROFILE (the KDC and its tools) of this directory.

    kdc.principal("alice")                # alice@HIVECAT.TEST with random keys; returns the name
    kdc.keytab("alice", path)             # its keys into a keytab file (the kvno moves on: older keytabs go stale)
    kdc.env                               # KRB5_CONFIG for clients (Python's gssapi, kinit, the JVM's -D below)
    kdc.jvm_options                       # -Djava.security.krb5.conf=...

Encryption types are AES (aes256-cts-hmac-sha1-96, aes128-cts-hmac-sha1-96), what JDK 17 and MIT both
default to; tickets last 10 hours, renewable for 7 days. Host names are never canonicalized (rdns and
dns_canonicalize_hostname off): services are named by the host the client dials (HTTP/localhost).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hivecat.local.net import free_port, port_open
from hivecat.local.processes import stop_process_group

REALM = "HIVECAT.TEST"
ENCTYPES = "aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal"
TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit")


def missing_tools() -> list[str]:
    paths = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return [tool for tool in TOOLS if shutil.which(tool, path=paths) is None]


def _tool(name: str) -> str:
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") or name


def krb5_conf(realm: str, kdc_port: int, *, extra_realms: dict[str, int] | None = None) -> str:
    """A client krb5.conf: `realm` is the default; each realm's KDC on 127.0.0.1 over TCP."""
    realms = {realm: kdc_port, **(extra_realms or {})}
    blocks = "\n".join(f" {name} = {{\n  kdc = 127.0.0.1:{port}\n }}" for name, port in realms.items())
    return (f"[libdefaults]\n default_realm = {realm}\n dns_lookup_kdc = false\n dns_lookup_realm = false\n"
            " rdns = false\n dns_canonicalize_hostname = false\n udp_preference_limit = 1\n"
            " ticket_lifetime = 10h\n renew_lifetime = 7d\n forwardable = true\n"
            f"[realms]\n{blocks}\n[domain_realm]\n localhost = {realm}\n")


class Kdc:
    """One KDC process over its own database; principals and keytabs are made with kadmin.local."""

    def __init__(self, workdir: Path, realm: str = REALM) -> None:
        self.workdir = Path(workdir)
        self.realm = realm
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.start_seconds = 0.0

    @property
    def krb5_conf(self) -> Path:
        return self.workdir / "krb5.conf"

    @property
    def env(self) -> dict[str, str]:
        """What a client process needs to find this realm (no ticket cache: each client names its own)."""
        return {"KRB5_CONFIG": str(self.krb5_conf)}

    @property
    def jvm_options(self) -> list[str]:
        return [f"-Djava.security.krb5.conf={self.krb5_conf}"]

    def _admin_env(self) -> dict[str, str]:
        return {**os.environ, "KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.workdir / "kdc.conf")}

    def start(self, timeout: float = 30.0) -> "Kdc":
        began = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        d = self.workdir
        (d / "kdc.conf").write_text(
            f"[kdcdefaults]\n kdc_ports = {self.port}\n kdc_tcp_ports = {self.port}\n"
            f"[realms]\n {self.realm} = {{\n  database_name = {d}/principal\n  key_stash_file = {d}/stash\n"
            f"  acl_file = {d}/kadm5.acl\n  max_life = 10h\n  max_renewable_life = 7d\n"
            f"  supported_enctypes = {ENCTYPES}\n }}\n[logging]\n kdc = FILE:{d}/kdc.log\n")
        self.krb5_conf.write_text(krb5_conf(self.realm, self.port))
        subprocess.run([_tool("kdb5_util"), "create", "-s", "-r", self.realm, "-P", uuid.uuid4().hex],
                       env=self._admin_env(), check=True, capture_output=True, timeout=60)
        self.process = subprocess.Popen([_tool("krb5kdc"), "-n", "-r", self.realm, "-P", str(d / "kdc.pid")],
                                        env=self._admin_env(), stdout=subprocess.DEVNULL,
                                        stderr=open(d / "kdc.err", "wb"), start_new_session=True)
        deadline = time.monotonic() + timeout
        while not port_open(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the KDC did not open 127.0.0.1:{self.port}: "
                                   f"{(d / 'kdc.err').read_text(errors='replace')[-2000:]}")
            time.sleep(0.05)
        self.start_seconds = round(time.monotonic() - began, 2)
        return self

    def stop(self) -> None:
        process, self.process = self.process, None
        stop_process_group(process, 5.0)

    def kadmin(self, *queries: str) -> str:
        out = []
        for query in queries:  # kadmin.local runs one -q at a time
            done = subprocess.run([_tool("kadmin.local"), "-r", self.realm, "-q", query], env=self._admin_env(),
                                  capture_output=True, text=True, timeout=60)
            if done.returncode != 0 or "error" in done.stderr.lower() or "not exist" in done.stderr:
                raise RuntimeError(f"kadmin.local -q {query!r}: {done.stderr.strip()}")
            out.append(done.stdout)
        return "".join(out)

    def qualified(self, name: str) -> str:
        return name if "@" in name else f"{name}@{self.realm}"

    def principal(self, name: str) -> str:
        """Create `name` with random keys (no password exists); returns name@REALM."""
        principal = self.qualified(name)
        self.kadmin(f"addprinc -randkey {principal}")
        return principal

    def keytab(self, names: list[str] | str, path: Path) -> Path:
        """Export the keys of `names` into `path` (0600). Each export draws new keys (the kvno moves on)."""
        for name in [names] if isinstance(names, str) else names:
            self.kadmin(f"ktadd -k {path} {self.qualified(name)}")
        os.chmod(path, 0o600)
        return path

    def issued(self, since: int = 0) -> list[str]:
        """The service tickets issued from byte `since` of the KDC's log on, as 'client for service' (the log's
        own words): who asked to reach what. `len(self.log.read_bytes())` marks a point to read from."""
        text = self.log.read_bytes()[since:].decode(errors="replace") if self.log.exists() else ""
        return [line.rsplit(", ", 1)[-1] for line in text.splitlines() if "TGS_REQ" in line and "ISSUE" in line]

    @property
    def log(self) -> Path:
        return self.workdir / "kdc.log"

    def kinit(self, principal: str, keytab: Path, ccache: str, *, lifetime: str | None = None) -> None:
        """A ticket in `ccache` (kinit, as a user would), e.g. lifetime '5s' for one that soon expires."""
        args = [_tool("kinit"), "-kt", str(keytab), *(["-l", lifetime] if lifetime else []), self.qualified(principal)]
        subprocess.run(args, env={**os.environ, **self.env, "KRB5CCNAME": ccache}, check=True, capture_output=True,
                       timeout=30)


@pytest.fixture(scope="session")
def kdc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kdc]:
    """The session's KDC (realm HIVECAT.TEST), started once; stopped at the end."""
    missing = missing_tools()
    if missing:
        pytest.fail(f"{', '.join(missing)} missing: `make install` installs krb5-kdc, krb5-admin-server, krb5-user")
    server = Kdc(tmp_path_factory.mktemp("kdc"))
    server.start()
    # This process's own Kerberos clients (the tests' administrators, the engines called in-process) find the
    # realm here; its default ticket cache is an empty file of the session, never the machine's.
    saved = {key: os.environ.get(key) for key in ("KRB5_CONFIG", "KRB5CCNAME")}
    os.environ.update(server.env, KRB5CCNAME=f"FILE:{server.workdir}/default.cc")
    try:
        yield server
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
