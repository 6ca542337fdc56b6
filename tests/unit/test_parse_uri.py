"""parse_uri reads a file: URI's scheme itself, without urllib.parse (a plan of 100,000 units parses 200,000 URIs):
whatever the string, it answers exactly as it does when urlparse finds every scheme."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hivecat.copy import storage
from hivecat.copy.errors import CopyInputError
from hivecat.copy.storage import parse_uri

NEVER = re.compile(r"(?!)")  # matches nothing: every URI takes urlparse's way

PIECES = st.sampled_from(["file", "FILE", "File", "s3", "s3a", "hdfs", "f1le", "file+x", "x.y-z", "1file", ":", "//",
                          "/", "host", ":8020", "?", "#", "a", "..", ".", " ", "\t", "\x00", "%2F", "ü", "@", "-"])
URIS = st.lists(PIECES, max_size=8).map("".join)


def _outcome(uri: str) -> object:
    try:
        return parse_uri(uri, "--from")
    except CopyInputError as refused:
        return ("refused", str(refused))


@settings(max_examples=600, deadline=None)
@given(URIS)
@example("file:/a?b#c")
@example("FILE:///x/../y")
@example("file://host/x")
@example("file:relative")
@example("File:")
@example("file+x:/y")
@example("s3://b/k")
def test_a_file_uri_parses_as_urlparse_reads_it(uri: str) -> None:
    fast = _outcome(uri)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(storage, "SCHEME_PREFIX", NEVER)
        assert _outcome(uri) == fast
