"""When a SQL run logs notification events, and in which format: decided from the metastore's own tables
(catalog/sql/notifications.event_log), here on SQLite shapes of Hive 3 and 4 schemas. That the events are
right is proven on real metastores (tests/integration/test_notification_events.py)."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from hivecat.catalog.model import EVENTS_AUTO, EVENTS_OFF, EVENTS_ON
from hivecat.catalog.sql.notification_json import GZIP_FORMAT, JSON_FORMAT, gzip_message
from hivecat.catalog.sql.notifications import event_log
from hivecat.catalog.sql.schema import detect_schema
from support.hms_shapes import hms_metadata


def _metastore(tmp_path: Path, version: int, *, log: bool = True, next_event: int | None = None,
               formats: tuple[str, ...] = ()) -> sa.Engine:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'hms.db'}")
    md = hms_metadata(version)
    if not log:
        md.remove(md.tables["NOTIFICATION_LOG"])
    md.create_all(engine)
    with engine.begin() as conn:
        if next_event is not None:
            conn.execute(md.tables["NOTIFICATION_SEQUENCE"].insert().values(NNI_ID=1, NEXT_EVENT_ID=next_event))
        for n, message_format in enumerate(formats, 1):
            conn.execute(md.tables["NOTIFICATION_LOG"].insert().values(
                NL_ID=n, EVENT_ID=n, EVENT_TIME=0, EVENT_TYPE="CREATE_TABLE", MESSAGE="{}",
                MESSAGE_FORMAT=message_format))
    return engine


def _decide(engine: sa.Engine, mode: str):
    with engine.connect() as conn:
        return event_log(conn, detect_schema(conn), mode)


def test_a_metastore_whose_listener_logged_gets_events_in_the_format_of_its_latest_event(tmp_path: Path) -> None:
    engine = _metastore(tmp_path, 4, next_event=3, formats=(GZIP_FORMAT, JSON_FORMAT))
    decided = _decide(engine, EVENTS_AUTO)
    assert decided.write and decided.format == JSON_FORMAT and decided.note is None


@pytest.mark.parametrize("version, expected", [(3, JSON_FORMAT), (4, GZIP_FORMAT)])
def test_an_empty_log_gets_the_release_default_format(tmp_path: Path, version: int, expected: str) -> None:
    decided = _decide(_metastore(tmp_path, version, next_event=7), EVENTS_AUTO)
    assert decided.write and decided.format == expected


def test_no_listener_no_events_unless_asked_and_the_report_says_why(tmp_path: Path) -> None:
    engine = _metastore(tmp_path, 3, next_event=1)
    quiet = _decide(engine, EVENTS_AUTO)
    assert not quiet.write and "no notification listener has ever logged" in quiet.note
    assert _decide(engine, EVENTS_ON).write


def test_no_sequence_row_at_all_is_no_listener(tmp_path: Path) -> None:
    assert not _decide(_metastore(tmp_path, 3), EVENTS_AUTO).write


def test_off_means_off(tmp_path: Path) -> None:
    decided = _decide(_metastore(tmp_path, 3, next_event=9), EVENTS_OFF)
    assert not decided.write and decided.note is None


def test_a_schema_without_a_log_says_so(tmp_path: Path) -> None:
    without = _decide(_metastore(tmp_path, 3, log=False), EVENTS_ON)
    assert not without.write and "no notification log" in without.note


def test_a_format_hivecat_does_not_write_is_refused_with_a_note(tmp_path: Path) -> None:
    decided = _decide(_metastore(tmp_path, 3, next_event=2, formats=("avro-1.0",)), EVENTS_ON)
    assert not decided.write and "'avro-1.0'" in decided.note


def test_gzip_messages_are_what_hives_gzip_deserializer_reads() -> None:
    """Base64 of a gzip stream of the UTF-8 JSON (GzipJSONMessageEncoder's Serializer)."""
    message = json.dumps({"db": "sales", "location": "hdfs://nn/ü"})
    encoded = gzip_message(message)
    assert encoded.isascii() and gzip.decompress(base64.b64decode(encoded)).decode() == message
