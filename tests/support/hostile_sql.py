"""Hostile database servers on 127.0.0.1 that ask the client for the password in clear text and record every
byte it sends: a MySQL server speaking just enough of the protocol (HandshakeV10, then an AuthSwitchRequest or
more-data packet for a clear-text plugin) and a PostgreSQL server that answers the startup message with
AuthenticationCleartextPassword. Whatever the client answers, the server then refuses the login and hangs up,
so a client that did send the password fails too: the recorded bytes tell the two apart.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

# MySQL capability flags the fake announces: 4.1 protocol, secure connection (20-byte scramble), plugin auth,
# database in the handshake response, transactions. No CLIENT_SSL: the connection stays in clear text.
_MYSQL_CAPABILITIES = 0x0001 | 0x0008 | 0x0200 | 0x2000 | 0x8000 | 0x0008_0000
_SALT = b"0123456789abcdefghij"  # 20 bytes of "scramble"


@dataclass
class Recorded:
    """What clients sent, all connections together."""

    data: bytearray = field(default_factory=bytearray)
    connections: int = 0


def _read_exact(conn: socket.socket, size: int, into: bytearray) -> bytes:
    got = b""
    while len(got) < size:
        chunk = conn.recv(size - len(got))
        if not chunk:
            raise EOFError
        got += chunk
        into += chunk
    return got


def _drain(conn: socket.socket, into: bytearray) -> None:
    """Whatever else the client sends until it hangs up (or goes quiet)."""
    conn.settimeout(2)
    try:
        while chunk := conn.recv(4096):
            into += chunk
    except OSError:
        pass


# --- MySQL ------------------------------------------------------------------------------------------------

def _mysql_packet(seq: int, payload: bytes) -> bytes:
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


def _mysql_read(conn: socket.socket, into: bytearray) -> tuple[int, bytes]:
    header = _read_exact(conn, 4, into)
    size = int.from_bytes(header[:3], "little")
    return header[3], _read_exact(conn, size, into)


def _handshake(plugin: str) -> bytes:
    caps = _MYSQL_CAPABILITIES
    return (b"\x0a" + b"5.7.99-hostile\x00" + struct.pack("<I", 7) + _SALT[:8] + b"\x00"
            + struct.pack("<H", caps & 0xFFFF) + bytes([45]) + struct.pack("<H", 2) + struct.pack("<H", caps >> 16)
            + bytes([len(_SALT) + 1]) + b"\x00" * 10 + _SALT[8:] + b"\x00" + plugin.encode() + b"\x00")


def _mysql_error(seq: int) -> bytes:
    return _mysql_packet(seq, b"\xff" + struct.pack("<H", 1045) + b"#28000" + b"Access denied")


def mysql_session(default_plugin: str, ask: bytes) -> Callable[[socket.socket, bytearray], None]:
    """One hostile login: a handshake naming `default_plugin`, then, after the client's response, the packet
    `ask` (an AuthSwitchRequest or a more-data packet), then whatever the client answers, then an error."""
    def session(conn: socket.socket, into: bytearray) -> None:
        conn.sendall(_mysql_packet(0, _handshake(default_plugin)))
        seq, _ = _mysql_read(conn, into)           # HandshakeResponse41
        conn.sendall(_mysql_packet(seq + 1, ask))
        seq, _ = _mysql_read(conn, into)           # the answer: the password itself, if the client complies
        conn.sendall(_mysql_error(seq + 1))
    return session


def auth_switch(plugin: str, data: bytes = b"") -> bytes:
    return b"\xfe" + plugin.encode() + b"\x00" + data


MORE_DATA = b"\x01"  # "send more": what a server whose default plugin the client kept asks next
DIALOG_PASSWORD_PROMPT = b"\x04Password: "  # dialog: a password prompt (flag 4: input not echoed)


# --- PostgreSQL -------------------------------------------------------------------------------------------

_SSL_REQUEST, _GSSENC_REQUEST = 80877103, 80877104


def postgres_session(conn: socket.socket, into: bytearray) -> None:
    """A startup answered with AuthenticationCleartextPassword, the client's answer read, then FATAL."""
    while True:
        size, code = struct.unpack("!II", _read_exact(conn, 8, into))
        _read_exact(conn, size - 8, into)
        if code in (_SSL_REQUEST, _GSSENC_REQUEST):
            conn.sendall(b"N")  # no TLS, no GSS encryption: the client goes on in clear text
            continue
        break
    conn.sendall(b"R" + struct.pack("!II", 8, 3))  # AuthenticationCleartextPassword
    tag = _read_exact(conn, 1, into)
    if tag == b"p":
        (size,) = struct.unpack("!I", _read_exact(conn, 4, into))
        _read_exact(conn, size - 4, into)
    fields = b"SFATAL\x00C28P01\x00Mpassword authentication failed\x00\x00"
    conn.sendall(b"E" + struct.pack("!I", len(fields) + 4) + fields)


# --- the server -------------------------------------------------------------------------------------------

@contextmanager
def hostile_server(session: Callable[[socket.socket, bytearray], None]) -> Iterator[tuple[int, Recorded]]:
    """(port, recorded bytes) of a server on 127.0.0.1 that runs `session` for every connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    recorded, stop = Recorded(), threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            recorded.connections += 1
            with conn:
                conn.settimeout(10)
                try:
                    session(conn, recorded.data)
                except (EOFError, OSError):
                    continue  # the client hung up: nothing more to record
                _drain(conn, recorded.data)

    thread = threading.Thread(target=serve, name="hostile-sql", daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], recorded
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
