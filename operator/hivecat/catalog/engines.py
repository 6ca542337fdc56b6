"""The one place hivecat creates SQLAlchemy engines for metastore and journal databases, so that every
connection refuses to hand the password over in clear text.

A CR names the database host; whoever answers there (a hostile server, or a spoofed address) may ask the
client for the password as typed instead of a challenge response, and the drivers would comply:
- PyMySQL answers an auth switch to mysql_clear_password (also after a handshake that names it as the
  server's default) and dialog's "Password: " prompt with the password itself; its first handshake response
  never holds it (1.2: _request_authentication). Both plugins get a handler here (pymysql's
  `auth_plugin_map`, consulted on a switch and on more data for the handshake's plugin) that refuses on a
  connection without TLS and leaves them to PyMySQL's own code over TLS.
- libpq answers AuthenticationCleartextPassword with the password; its `require_auth` (libpq 16 and later,
  which psycopg[binary] bundles) refuses that method, whether or not the connection uses TLS.

The refusal is a driver error; connect.sql_failure (through clear_text_refusal) makes it the reason
InsecureAuthentication with a message that says what to do, never the password.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import pymysql
import sqlalchemy as sa
from pymysql.constants import CR

from hivecat.reasons import INSECURE_AUTHENTICATION  # noqa: F401  (re-exported: connect.sql_failure states it)

# libpq's require_auth: any method but `password` (clear text); SCRAM, MD5, GSS and SSPI never send it.
PG_REQUIRE_AUTH: Final = "!password"
_CLEAR_TEXT_PLUGINS: Final = ("mysql_clear_password", "dialog")


class ClearTextPasswordRefused(pymysql.err.OperationalError):
    """A MySQL/MariaDB server asked for the password in clear text on a connection without TLS. A subclass of
    pymysql's OperationalError, so SQLAlchemy wraps it as any other connection failure."""


class _RefuseClearText:
    """A pymysql auth plugin handler that sends nothing: pymysql calls authenticate() when the plugin runs."""

    def __init__(self, connection: Any, plugin: str) -> None:
        self.host = str(getattr(connection, "host", "") or "the server")
        self.plugin = plugin

    def authenticate(self, packet: Any) -> None:
        raise ClearTextPasswordRefused(
            CR.CR_AUTH_PLUGIN_ERR,
            f"{self.host} asked for the password in clear text ({self.plugin}) on a connection without TLS, and "
            "hivecat does not send it: give the database user mysql_native_password, caching_sha2_password or "
            f"ed25519 authentication, and make sure {self.host} is your database server")


def _clear_text_guard(plugin: str) -> Callable[[Any], _RefuseClearText | None]:
    """What pymysql constructs with the connection when `plugin` runs: None (pymysql's own handling) only over
    TLS; `_secure` is what pymysql itself sets once it has wrapped the socket in TLS."""
    def guard(connection: Any) -> _RefuseClearText | None:
        return None if getattr(connection, "_secure", False) else _RefuseClearText(connection, plugin)
    return guard


def password_safe_connect_args(url: sa.URL) -> dict[str, Any]:
    """The driver's connect arguments that keep the password from being sent in clear text (none for other
    drivers, e.g. SQLite journals)."""
    driver = url.get_driver_name()
    if driver == "pymysql":
        return {"auth_plugin_map": {name: _clear_text_guard(name) for name in _CLEAR_TEXT_PLUGINS}}
    if driver == "psycopg":
        return {"require_auth": PG_REQUIRE_AUTH}
    return {}


def sql_engine(url: str | sa.URL, *, connect_args: Mapping[str, Any] | None = None, **kwargs: Any) -> sa.Engine:
    """sa.create_engine with the connect arguments above (they win over the caller's and the URL's)."""
    url = sa.make_url(url)
    return sa.create_engine(url, connect_args={**(connect_args or {}), **password_safe_connect_args(url)},
                            **kwargs)


def clear_text_refusal(error: BaseException | None) -> str | None:
    """What to tell the user when a driver error is one of the refusals above; None for any other error."""
    if isinstance(error, ClearTextPasswordRefused):
        return str(error.args[1])
    if f'"{PG_REQUIRE_AUTH}"' in str(error or ""):  # libpq quotes the requirement it refused, in any language
        return ("the server asked for the password in clear text (password authentication), and hivecat does not "
                "send it: have pg_hba.conf use scram-sha-256 or md5 for this user, and make sure the host is your "
                "database server")
    return None
