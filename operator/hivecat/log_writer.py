"""The operator's log lines are written by a thread of their own, never by the event loop.

Writing a line is a system call, which lets go of the interpreter's lock; getting it back waits behind the
pass threads (up to the 5 ms switch interval each time). At 1,000 resources the loop writes a few thousand
lines while it starts (kopf's "Handler ... succeeded", "Resuming is processed"), and the event loop stalled
for up to 0.9 s inside StreamHandler.emit (a watchdog sampled its stack whenever a beat was 150 ms late).
Records now go to a queue; one thread formats and writes them, in order.
"""

from __future__ import annotations

import atexit
import logging
import queue
from logging.handlers import QueueHandler, QueueListener


class _Listener(QueueListener):
    def stop(self) -> None:
        """Write what is queued and end the thread; once (at exit, or before)."""
        if self._thread is not None:
            super().stop()


def write_from_a_thread(logger: logging.Logger | None = None) -> QueueListener | None:
    """Move `logger`'s (the root's) stream handlers behind a queue that a thread of their own empties; the
    logger's other handlers stay where they are. Returns the listener (None: no stream handler to move). At
    exit the listener writes what is queued."""
    logger = logger or logging.getLogger()
    streams = [h for h in logger.handlers if isinstance(h, logging.StreamHandler)]
    if not streams:
        return None
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    listener = _Listener(records, *streams, respect_handler_level=True)
    for handler in streams:
        logger.removeHandler(handler)
    logger.addHandler(QueueHandler(records))
    listener.start()
    atexit.register(listener.stop)
    return listener
