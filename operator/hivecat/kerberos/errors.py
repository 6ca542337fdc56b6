"""Why a Kerberos login or handshake failed, in one line that names the cause and what to do.

krb5's own words stay at the end in parentheses (administrators search for them); the cause comes first."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hivecat.kerberos.login import KerberosLogin


class KerberosError(Exception):
    """A login or a service ticket that cannot be had; the message is one line without secrets."""


# (words krb5 uses, lower case) -> the cause, as an administrator would put it
_CAUSES: tuple[tuple[str, str], ...] = (
    ("clock skew too great", "this machine's clock and the KDC's differ by more than the allowed skew "
                             "(5 minutes by default): synchronize the clocks"),
    ("client '", "the principal is unknown to the KDC (a typo, or another realm)"),
    ("not found in kerberos database", "the service's principal is unknown to the KDC: check the service "
                                       "principal configured for it"),
    ("cannot find kdc for realm", "the realm has no KDC in this machine's krb5 configuration (a realm the "
                                  "administrator did not configure, or a typo in the principal)"),
    ("cannot contact any kdc", "no KDC of the realm answered"),
    ("preauthentication failed", "the keytab's keys are not the principal's current keys (a stale or another "
                                 "principal's keytab)"),
    ("decrypt integrity check failed", "the keytab's keys are not the principal's current keys (a stale or "
                                       "another principal's keytab)"),
    ("no key table entry found", "the keytab holds no key for this principal"),
    ("key table file", "the keytab cannot be read"),
    ("unsupported key table format", "the file is not a keytab"),
    ("bad format in keytab", "the file is not a keytab"),
    ("ticket expired", "the ticket has expired: renew it (kinit) or log in with a keytab"),
    ("credential has expired", "the ticket has expired: renew it (kinit) or log in with a keytab"),
    ("no credentials cache found", "there is no ticket: run kinit, or give a principal and a keytab"),
    ("no kerberos credentials available", "there is no ticket: run kinit, or give a principal and a keytab"),
    ("can't find client principal", "the ticket cache holds no ticket of this principal: run kinit as it"),
    ("matching credential not found", "the ticket cache holds no ticket of this principal: run kinit as it"),
)


def explain(exc: BaseException, login: KerberosLogin | None, service: str | None = None) -> str:
    """One line: who, towards which service, the cause, then krb5's own words."""
    try:
        words = " ".join(exc.gen_message().split())  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - any GSS error still gets a line
        words = " ".join(str(exc).split())
    minor = re.search(r"Minor \(\d+\): (.*)$", words)  # krb5's own cause; the major status is GSS's generic one
    words = minor.group(1) if minor and minor.group(1).strip() else words
    lowered = words.lower()
    cause = next((why for key, why in _CAUSES if key in lowered), "Kerberos authentication failed")
    who = login.describe() if login else "the default ticket cache"
    towards = f" towards {service}" if service else ""
    return f"Kerberos: {who}{towards}: {cause} ({words})"
