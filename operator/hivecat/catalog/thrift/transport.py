"""Connections to a Hive Metastore's Thrift API: plain, or SASL GSSAPI (Kerberos) as a login of its own.

Thrift's SASL framing (as Hive's TSaslClientTransport speaks it): a START frame naming the mechanism and an OK
frame with the initial response, then OK challenges answered with OK responses until the server sends COMPLETE;
each frame is one status byte and a four-byte length. After the handshake every message is one frame of a
four-byte length and the (wrapped, when the layer is integrity or confidentiality) bytes. A BAD or ERROR status
carries the server's reason, which ends the handshake.
"""

from __future__ import annotations

import struct
from io import BytesIO
from typing import Any

from thrift.transport.TTransport import TTransportBase, TTransportException

from hivecat.catalog.targets import ThriftSasl
from hivecat.kerberos.sasl import GssapiSasl

START, OK, BAD, ERROR, COMPLETE = 1, 2, 3, 4, 5
MAX_HANDSHAKE = 1 << 20       # a handshake frame larger than this comes from no metastore
MAX_FRAME = 256 << 20         # Hive's own limit on a message is of this order


class SaslClientTransport(TTransportBase):
    def __init__(self, transport: Any, sasl: GssapiSasl) -> None:
        self.transport, self.sasl = transport, sasl
        self._write = BytesIO()
        self._read = BytesIO()

    def isOpen(self) -> bool:
        return self.transport.isOpen()

    def open(self) -> None:
        if not self.transport.isOpen():
            self.transport.open()
        self._send(START, self.sasl.mechanism.encode("ascii"))
        self._send(OK, self.sasl.process(None))
        while True:
            status, payload = self._receive()
            if status == OK:
                self._send(OK, self.sasl.process(payload))
            elif status == COMPLETE:
                if not self.sasl.complete:
                    raise TTransportException(TTransportException.NOT_OPEN,
                                              "the metastore ended the SASL handshake before it was complete")
                return
            else:
                reason = payload.decode("utf-8", "replace").strip() or f"status {status}"
                raise TTransportException(TTransportException.NOT_OPEN, f"the metastore refused the SASL "
                                                                        f"handshake: {reason}")

    def _send(self, status: int, body: bytes) -> None:
        self.transport.write(struct.pack(">BI", status, len(body)) + body)
        self.transport.flush()

    def _receive(self) -> tuple[int, bytes]:
        status, length = struct.unpack(">BI", self.transport.readAll(5))
        if length > MAX_HANDSHAKE:
            raise TTransportException(TTransportException.SIZE_LIMIT, f"a SASL handshake frame of {length} bytes")
        return status, self.transport.readAll(length) if length else b""

    def close(self) -> None:
        self.transport.close()

    def write(self, data: bytes) -> None:
        self._write.write(data)

    def flush(self) -> None:
        data = self.sasl.wrap(self._write.getvalue())
        self._write = BytesIO()
        self.transport.write(struct.pack(">i", len(data)) + data)
        self.transport.flush()

    def read(self, size: int) -> bytes:
        data = self._read.read(size)
        if data:
            return data
        (length,) = struct.unpack(">i", self.transport.readAll(4))
        if not 0 <= length <= MAX_FRAME:
            raise TTransportException(TTransportException.SIZE_LIMIT, f"a Thrift frame of {length} bytes")
        self._read = BytesIO(self.sasl.unwrap(self.transport.readAll(length)))
        return self._read.read(size)


def metastore_client(host: str, port: int, sasl: ThriftSasl | None = None, timeout: float | None = None) -> Any:
    """An hmsclient client on the metastore at host:port, not yet open (`.open()`, or use it as a context)."""
    from hmsclient import hmsclient
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    if sasl is None:
        return hmsclient.HMSClient(host=host, port=port)
    socket = TSocket.TSocket(host, port)
    if timeout is not None:
        socket.setTimeout(timeout * 1000)
    transport = TTransport.TBufferedTransport(SaslClientTransport(socket, GssapiSasl(sasl.login, sasl.service(host))))
    return hmsclient.HMSClient(iprot=TBinaryProtocol.TBinaryProtocol(transport))
