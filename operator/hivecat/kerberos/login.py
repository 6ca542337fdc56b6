"""Who a client is in Kerberos, and its credentials, each login in a credential store of its own.

A login is a principal and where its keys come from: a keytab file, or (no keytab) a ticket cache a user
filled with kinit. Credentials are acquired through GSS-API's credential-store extension
(gss_acquire_cred_from): a keytab login keeps its tickets in a MEMORY: cache private to that login, so two
logins in one process (two namespaces' principals in the operator) never share, read or replace each other's
tickets, and none of them touches the process's default cache (KRB5CCNAME). MIT krb5 gets the first ticket
from the keytab when it is first needed. A credential handle does not get a new one by itself once that ticket
expired (tests/integration/test_kerberos_metastore.py shows krb5's "Ticket expired"), so `credentials` acquires
the login's credentials anew when less than RENEW_MARGIN of their life is left: a keytab login lives on for as
long as the keytab is readable. A ticket-cache login is what kinit made: when that ticket expires, the login
fails (errors.py says so) until the user runs kinit again.

Realms and KDCs are not a login's: they come from the process's krb5 configuration (KRB5_CONFIG, which the
operator's admin sets), never from a login.

A login holds paths and names only, no key: it can be logged, pickled to Spark executors (which need the same
keytab at the same path) and compared.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from hivecat.kerberos import keytab

RENEW_MARGIN = 60.0  # seconds of a keytab login's ticket life below which it logs in again
PRINCIPAL_ENV = "HIVECAT_KERBEROS_PRINCIPAL"
KEYTAB_ENV = "HIVECAT_KERBEROS_KEYTAB"


@dataclass(frozen=True)
class KerberosLogin:
    principal: str | None = None  # alice@EXAMPLE.COM; None: the ticket cache's own principal
    keytab: str | None = None     # a keytab file's path; None: the ticket cache (kinit)
    ccache: str | None = None     # the ticket cache of a ticket-cache login; None: the default (KRB5CCNAME)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> KerberosLogin | None:
        """$HIVECAT_KERBEROS_PRINCIPAL with $HIVECAT_KERBEROS_KEYTAB, or the principal alone (ticket cache);
        None when neither is set."""
        principal, keytab = environ.get(PRINCIPAL_ENV) or None, environ.get(KEYTAB_ENV) or None
        if principal is None and keytab is None:
            return None
        return cls(principal, keytab)

    @property
    def store(self) -> dict[str, str]:
        """The GSS credential store: a keytab login's tickets live in a MEMORY: cache of its own."""
        if self.keytab is None:
            return {"ccache": self.ccache} if self.ccache else {}
        key = hashlib.sha256(f"{self.principal}\0{self.keytab}".encode()).hexdigest()[:24]
        return {"client_keytab": f"FILE:{os.path.abspath(self.keytab)}", "ccache": f"MEMORY:hivecat-{key}"}

    def describe(self) -> str:
        """Words for messages: the principal and where its keys are (a path, never a key)."""
        who = self.principal or "the ticket cache's principal"
        return f"{who} (keytab {self.keytab})" if self.keytab else f"{who} (ticket cache {self.ccache or 'default'})"


_lock = threading.Lock()
_credentials: dict[KerberosLogin, object] = {}


def credentials(login: KerberosLogin):
    """The login's initiator credentials (gssapi.Credentials), one object per login per process.

    Raises KerberosError (errors.py) with one line when the login cannot be used."""
    import gssapi

    from hivecat.kerberos.errors import KerberosError, explain

    with _lock:
        found = _credentials.get(login)
        if found is not None and (login.keytab is None or _lifetime(found) > RENEW_MARGIN):
            return found
        if login.keytab is not None:
            if login.principal is None:
                raise KerberosError(f"Kerberos: keytab {login.keytab} needs a principal to log in as")
            _check_keytab(login)
        try:
            name = gssapi.Name(login.principal, gssapi.NameType.kerberos_principal) if login.principal else None
            creds = gssapi.Credentials(name=name, usage="initiate", store=login.store or None)
        except gssapi.exceptions.GSSError as exc:
            raise KerberosError(explain(exc, login)) from None
        _credentials[login] = creds
        return creds


def _lifetime(creds) -> float:
    """Seconds the credentials have left (0 once expired; krb5 says so by an error)."""
    import gssapi

    try:
        left = creds.lifetime
    except gssapi.exceptions.GSSError:
        return 0.0
    return float("inf") if left is None else float(left)


def forget(login: KerberosLogin) -> None:
    """Drop a login's credentials (its keytab changed, or its Secret is gone): the next use acquires anew."""
    with _lock:
        _credentials.pop(login, None)


def _check_keytab(login: KerberosLogin) -> None:
    from hivecat.kerberos.errors import KerberosError

    assert login.keytab is not None and login.principal is not None
    try:
        with open(login.keytab, "rb") as file:
            held = keytab.principals(file.read())
    except OSError as exc:
        raise KerberosError(f"Kerberos: keytab {login.keytab} cannot be read ({exc.strerror})") from None
    except keytab.KeytabUnreadable as exc:
        raise KerberosError(f"Kerberos: keytab {login.keytab}: {exc}") from None
    if not keytab.holds(held, login.principal):
        raise KerberosError(f"Kerberos: keytab {login.keytab} holds no key for {login.principal} (it holds "
                            f"{', '.join(held) or 'no key at all'})")
