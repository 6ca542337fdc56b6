"""SPNEGO (RFC 4559) for HTTP services behind Hadoop's AuthenticationFilter (WebHDFS, KMS, the web UIs).

The client sends `Authorization: Negotiate <token>` with a token for the service's HTTP principal; Hadoop
answers with its `hadoop.auth` cookie, which the client's session then presents until it expires. A service
principal is named as Hadoop names it, HTTP/_HOST@REALM, where _HOST is replaced by the host the client
dials; without one configured, the GSS host-based name HTTP@host is used (its realm from krb5's domain_realm
mapping, or the default realm).
"""

from __future__ import annotations

import base64

from hivecat.kerberos.errors import KerberosError, explain
from hivecat.kerberos.login import KerberosLogin, credentials

SPNEGO_OID = "1.3.6.1.5.5.2"


def service_principal(pattern: str | None, host: str) -> str:
    """`pattern` with _HOST replaced by `host` (lower case, as Hadoop's SecurityUtil does); HTTP@host without one."""
    if not pattern:
        return f"HTTP@{host.lower()}"
    return pattern.replace("_HOST", host.lower())


def negotiate(login: KerberosLogin, service: str) -> str:
    """The Authorization header's value for one request to `service` (HTTP/host@REALM or HTTP@host)."""
    import gssapi

    try:
        kind = gssapi.NameType.hostbased_service if "@" in service and "/" not in service \
            else gssapi.NameType.kerberos_principal
        context = gssapi.SecurityContext(name=gssapi.Name(service, kind), creds=credentials(login), usage="initiate",
                                         mech=gssapi.OID.from_int_seq(SPNEGO_OID))
        token = context.step()
    except gssapi.exceptions.GSSError as exc:
        raise KerberosError(explain(exc, login, service)) from None
    return "Negotiate " + base64.b64encode(token or b"").decode("ascii")
