"""Kerberos logins without a KDC: keytab principals, credential stores, service names, one-line causes.
(tests/integration/test_kerberos_hdfs.py runs them against a real KDC and a kerberized HDFS.)"""

from __future__ import annotations

import struct

import pytest

from hivecat.kerberos import keytab
from hivecat.kerberos.errors import KerberosError, explain
from hivecat.kerberos.login import KerberosLogin, credentials
from hivecat.kerberos.spnego import service_principal
from support.keytabs import entry


def test_keytab_principals_in_both_versions_with_holes() -> None:
    data = bytes([5, 2]) + entry("EXAMPLE.COM", "alice") + struct.pack(">i", -12) + b"\0" * 12 \
        + entry("EXAMPLE.COM", "HTTP", "nn.example.com") + entry("EXAMPLE.COM", "alice")
    assert keytab.principals(data) == ["alice@EXAMPLE.COM", "HTTP/nn.example.com@EXAMPLE.COM"]
    assert keytab.principals(bytes([5, 1]) + entry("R", "bob", version=1)) == ["bob@R"]
    assert keytab.holds(["alice@EXAMPLE.COM"], "alice") and keytab.holds(["alice@EXAMPLE.COM"], "alice@EXAMPLE.COM")
    assert not keytab.holds(["alice@EXAMPLE.COM"], "alice@OTHER.COM") and not keytab.holds(["alice@X"], "bob")


@pytest.mark.parametrize("data, words", [(b"", "not a keytab"), (b"PK\x03\x04", "not a keytab"),
                                         (bytes([5, 2]) + entry("R", "a")[:-5], "truncated")])
def test_what_is_not_a_keytab_is_said(data: bytes, words: str) -> None:
    with pytest.raises(keytab.KeytabUnreadable, match=words):
        keytab.principals(data)


def test_a_keytab_without_the_principal_names_what_it_holds_and_no_key(tmp_path) -> None:
    path = tmp_path / "team.keytab"
    path.write_bytes(bytes([5, 2]) + entry("EXAMPLE.COM", "alice", key=b"SECRETKEYBYTES" * 2))
    with pytest.raises(KerberosError) as refused:
        credentials(KerberosLogin("bob@EXAMPLE.COM", str(path)))
    message = str(refused.value)
    assert message == f"Kerberos: keytab {path} holds no key for bob@EXAMPLE.COM (it holds alice@EXAMPLE.COM)"
    with pytest.raises(KerberosError, match="cannot be read"):
        credentials(KerberosLogin("bob", str(tmp_path / "missing")))
    with pytest.raises(KerberosError, match="needs a principal"):
        credentials(KerberosLogin(None, str(path)))


def test_each_keytab_login_has_a_memory_cache_of_its_own() -> None:
    alice, bob = KerberosLogin("alice@R", "/k/alice"), KerberosLogin("bob@R", "/k/bob")
    assert alice.store["ccache"].startswith("MEMORY:") and alice.store["ccache"] != bob.store["ccache"]
    assert alice.store["client_keytab"] == "FILE:/k/alice"
    assert KerberosLogin("alice@R", "/k/alice").store == alice.store
    assert KerberosLogin("alice@R").store == {}  # the ticket cache: the default one
    assert KerberosLogin(None, None, "FILE:/tmp/cc").store == {"ccache": "FILE:/tmp/cc"}
    assert KerberosLogin.from_environment({}) is None
    assert KerberosLogin.from_environment({"HIVECAT_KERBEROS_PRINCIPAL": "a@R", "HIVECAT_KERBEROS_KEYTAB": "/k"}) \
        == KerberosLogin("a@R", "/k")


def test_service_principals_follow_hadoops_host_pattern() -> None:
    assert service_principal("HTTP/_HOST@EXAMPLE.COM", "NN1.example.com") == "HTTP/nn1.example.com@EXAMPLE.COM"
    assert service_principal(None, "nn1") == "HTTP@nn1"
    assert service_principal("HTTP/web@EXAMPLE.COM", "nn1") == "HTTP/web@EXAMPLE.COM"


class FakeGssError(Exception):
    def __init__(self, text: str) -> None:
        self.text = text

    def gen_message(self) -> str:
        return self.text


@pytest.mark.parametrize("minor, cause", [
    ("Clock skew too great", "synchronize the clocks"),
    ("Client 'carol@EXAMPLE.COM' not found in Kerberos database", "principal is unknown to the KDC"),
    ("Server HTTP/nn@EXAMPLE.COM not found in Kerberos database", "service's principal is unknown"),
    ('Cannot find KDC for realm "OTHER.COM"', "realm has no KDC in this machine's krb5 configuration"),
    ("Ticket expired", "has expired"),
    ("Preauthentication failed", "not the principal's current keys"),
])
def test_krb5_causes_become_one_line_with_krb5s_own_words_last(minor: str, cause: str) -> None:
    error = FakeGssError(f"Major (851968): Unspecified GSS failure.  Minor code may provide more information, "
                         f"Minor (2529638936): {minor}")
    line = explain(error, KerberosLogin("alice@EXAMPLE.COM", "/k/alice"), "HTTP/nn@EXAMPLE.COM")
    assert line.startswith("Kerberos: alice@EXAMPLE.COM (keytab /k/alice) towards HTTP/nn@EXAMPLE.COM: ")
    assert cause in line and line.endswith(f"({minor})") and "\n" not in line


@pytest.mark.parametrize("extra, words", [
    (["--catalog", "mysql://u@db:3306/hms", "--principal", "alice"], "apply to thrift:// catalogs only"),
    (["--catalog", "thrift://hms:9083", "--principal", "alice"], "needs --metastore-principal"),
    (["--catalog", "thrift://hms:9083", "--metastore-principal", "hive/_HOST@R", "--keytab", "/k"],
     "--keytab needs --principal"),
])
def test_relocate_kerberos_options_are_checked_before_anything_is_contacted(extra, words, capsys) -> None:
    from hivecat import cli

    assert cli.main(["relocate", "--from", "hdfs://a:8020/w", "--to", "hdfs://b:8020/w", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err, err


def test_a_metastore_principal_follows_hadoops_host_pattern() -> None:
    from hivecat.catalog.targets import ThriftSasl

    sasl = ThriftSasl(KerberosLogin("alice@R", "/k"), "hive/_HOST@R")
    assert sasl.service("HMS.Example.com") == "hive/hms.example.com@R"
    assert ThriftSasl(KerberosLogin(), "hive/fixed@R").service("x") == "hive/fixed@R"
