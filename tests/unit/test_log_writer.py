"""hivecat/log_writer.py: the operator's lines are written by a thread of their own, formatted as before, in
order; handlers that are not streams (kopf's Event poster) stay on the logger."""

from __future__ import annotations

import io
import logging
import threading

from hivecat.log_writer import write_from_a_thread


class Recording(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writers: set[str] = set()

    def write(self, text: str) -> int:
        self.writers.add(threading.current_thread().name)
        return super().write(text)


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.getMessage(), threading.current_thread().name))


def test_lines_are_written_by_another_thread_formatted_and_in_order() -> None:
    logger = logging.getLogger("hivecat.test.log_writer")
    logger.propagate, logger.level = False, logging.INFO
    stream, kept = Recording(), Kept()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("[%(levelname)s] %(name)s %(message)s"))
    logger.addHandler(handler)
    logger.addHandler(kept)
    try:
        listener = write_from_a_thread(logger)
        assert listener is not None
        for i in range(50):
            logger.info("line %d of %s", i, "fifty")
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("failed")
        listener.stop()
        lines = stream.getvalue().splitlines()
        assert lines[:50] == [f"[INFO] hivecat.test.log_writer line {i} of fifty" for i in range(50)]
        assert lines[50] == "[ERROR] hivecat.test.log_writer failed" and "ValueError: boom" in stream.getvalue()
        assert stream.writers and threading.current_thread().name not in stream.writers
        assert kept.seen[0] == ("line 0 of fifty", threading.current_thread().name)  # stays on the logger
        assert write_from_a_thread(logger) is None  # nothing left to move: a second call changes nothing
    finally:
        logger.handlers.clear()
