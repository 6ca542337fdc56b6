"""The URI schemes hivecat knows, in one table, and the one rule for a bare path given where a URI is needed.

Both engines read it: the location engine (`hivecat relocate`, locations/prefix.py) asks which family a
scheme belongs to, the copy engine (`hivecat distcp`, copy/storage.py) which schemes it can reach and
through which filesystem. Both take URIs only: a bare path (`/tmp/x`) is refused by both, in the same
words, naming the URI to write instead (bare_path_refusal()).

Plain logic, standard library only: the CLI imports this module at startup.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Scheme:
    family: str           # schemes of one family reach the same storage through different clients
    copy: bool = False    # the copy engine reaches it (through its family's filesystem: file, s3 or hdfs)


# Moving between schemes of one family is a reconfiguration, moving across families moves data. Each
# family is named after its first member, so an unknown scheme (its own family) can never collide with
# a family name.
SCHEMES: dict[str, Scheme] = {
    "hdfs": Scheme("hdfs", copy=True), "viewfs": Scheme("hdfs"),
    "s3": Scheme("s3", copy=True), "s3a": Scheme("s3", copy=True), "s3n": Scheme("s3", copy=True),
    "abfs": Scheme("abfs"), "abfss": Scheme("abfs"), "wasb": Scheme("abfs"), "wasbs": Scheme("abfs"),
    "gs": Scheme("gs"),
    "file": Scheme("file", copy=True),
}

# The schemes the copy engine reaches, in table order.
COPY_SCHEMES: tuple[str, ...] = tuple(name for name, scheme in SCHEMES.items() if scheme.copy)

SCHEME_PREFIX = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")  # urllib.parse's scheme_chars, a letter first


def scheme_family(scheme: str) -> str:
    """The family a scheme belongs to; an unknown scheme is its own family."""
    scheme = scheme.lower()
    known = SCHEMES.get(scheme)
    return known.family if known else scheme


def copy_family(scheme: str) -> str | None:
    """The family whose filesystem the copy engine uses for `scheme` (file, s3 or hdfs), or None when
    the copy engine cannot reach it."""
    known = SCHEMES.get(scheme.lower())
    return known.family if known and known.copy else None


def schemes_of(family: str, copy: bool = False) -> tuple[str, ...]:
    """The schemes of a family (only those the copy engine reaches, with copy=True), in table order."""
    return tuple(name for name, s in SCHEMES.items() if s.family == family and (s.copy or not copy))


def bare_path_refusal(text: str) -> str | None:
    """Why `text`, given where a location URI is needed, must be refused as a path, or None when it is
    not a path (a URI, or a string with a broken scheme that the caller refuses in its own words).

    A path is a string with no URI scheme (`/tmp/x`, `data/t`) or a file: URI with a relative path
    (`file:data`). The message names the fix: for an absolute path, the exact URI to write.
    """
    match = SCHEME_PREFIX.match(text)
    if match is None:
        if "://" in text or not text.strip():
            return None
        path, what = text, "a bare path (no URI scheme)"
    elif match.group(1).lower() == "file" and not text[match.end():].startswith("/"):
        path, what = text[match.end():], "a relative path"
    else:
        return None
    if path.startswith("/"):
        return f"{text!r} is {what}; write it as a URI: file://{path}"
    example = f"file:///…/{posixpath.normpath(path)}" if path else "file:///absolute/path"
    return f"{text!r} is {what}; write it as a URI with an absolute path: {example}"
