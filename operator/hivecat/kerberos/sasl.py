"""The SASL GSSAPI mechanism (RFC 4752) as a client, for Hive Metastores with `hive.metastore.sasl.enabled`.

The exchange: GSS-API context tokens until the context is established (the client asks for mutual
authentication), then the server's wrapped offer of security layers (one byte of bits: 1 none, 2 integrity,
4 confidentiality; three bytes of the largest message it takes), which the client answers, wrapped, with the
layer it picks and its own limit. Hadoop's servers offer what `hadoop.rpc.protection` allows (authentication,
integrity, privacy); the client picks the strongest offered. With integrity or confidentiality every later
message is wrapped (wrap/unwrap), with authentication alone it travels as it is.
"""

from __future__ import annotations

import struct

from hivecat.kerberos.errors import KerberosError, explain
from hivecat.kerberos.login import KerberosLogin, credentials

KRB5_OID = "1.2.840.113554.1.2.2"
NO_LAYER, INTEGRITY, CONFIDENTIALITY = 1, 2, 4
MAX_MESSAGE = 0xFFFFFF


class GssapiSasl:
    """One client exchange; `service` is the server's principal, e.g. hive/metastore.example.com@EXAMPLE.COM."""

    mechanism = "GSSAPI"

    def __init__(self, login: KerberosLogin, service: str) -> None:
        import gssapi

        self.login, self.service = login, service
        self.complete = False
        self.layer = NO_LAYER
        self._negotiating = False
        try:
            self._context = gssapi.SecurityContext(
                name=gssapi.Name(service, gssapi.NameType.kerberos_principal), creds=credentials(login),
                usage="initiate", mech=gssapi.OID.from_int_seq(KRB5_OID),
                flags=gssapi.RequirementFlag.mutual_authentication | gssapi.RequirementFlag.integrity
                | gssapi.RequirementFlag.confidentiality)
        except gssapi.exceptions.GSSError as exc:
            raise KerberosError(explain(exc, login, service)) from None

    def process(self, challenge: bytes | None = None) -> bytes:
        """The response to the server's challenge (None: the initial response)."""
        import gssapi

        try:
            if not self._context.complete:
                return self._context.step(challenge) or b""
            if not self._negotiating:  # the server's offer of layers
                self._negotiating = True
                offer = self._context.unwrap(challenge or b"").message
                if len(offer) != 4:
                    raise KerberosError(f"Kerberos: {self.service} sent a malformed SASL offer ({len(offer)} bytes)")
                offered = offer[0]
                self.layer = next(bit for bit in (CONFIDENTIALITY, INTEGRITY, NO_LAYER) if offered & bit) \
                    if offered & (CONFIDENTIALITY | INTEGRITY | NO_LAYER) else 0
                if not self.layer:
                    raise KerberosError(f"Kerberos: {self.service} offered no SASL security layer this client knows")
                answer = struct.pack(">I", MAX_MESSAGE)[1:]
                self.complete = True
                return self._context.wrap(bytes([self.layer]) + answer, False).message
            return b""
        except gssapi.exceptions.GSSError as exc:
            raise KerberosError(explain(exc, self.login, self.service)) from None

    def wrap(self, data: bytes) -> bytes:
        if self.layer == NO_LAYER:
            return data
        return self._context.wrap(data, self.layer == CONFIDENTIALITY).message

    def unwrap(self, data: bytes) -> bytes:
        if self.layer == NO_LAYER:
            return data
        return self._context.unwrap(data).message
