"""The operator's log: the success of a per-event handler or indexer is not logged (one line per event of every resource
at 1,000 resources); everything else kopf logs, including those handlers' failures, still is."""

from __future__ import annotations

import inspect
import logging

from hivecat import handlers
from hivecat.handlers import clusterstorage, policy, tablereplica


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("kopf.objects", logging.INFO, __file__, 1, message, None, None)


def test_per_event_handler_successes_are_dropped_and_nothing_else() -> None:
    for name in handlers._EVENT_HANDLERS:
        assert not handlers._quiet_event_handlers(record(f"Handler {name!r} succeeded."))
        assert handlers._quiet_event_handlers(record(f"Handler {name!r} failed with an exception. Will retry."))
    for name in handlers._INDEXERS:
        assert not handlers._quiet_event_handlers(record(f"Indexer {name!r} succeeded."))
    assert handlers._quiet_event_handlers(record("Handler 'reconcile' succeeded."))
    assert handlers._quiet_event_handlers(record("Creation is processed: 1 succeeded; 0 failed."))


def test_the_names_are_the_event_handlers_that_exist() -> None:
    """A renamed handler would be logged again: each name is an async function of the handlers."""
    found = {name: getattr(module, name) for module in (handlers, clusterstorage, policy, tablereplica)
             for name in handlers._EVENT_HANDLERS if hasattr(module, name)}
    assert set(found) == set(handlers._EVENT_HANDLERS)
    assert all(inspect.iscoroutinefunction(function) for function in found.values())
    indexers = {name for module in (clusterstorage, policy, tablereplica) for name in handlers._INDEXERS
                if hasattr(module, name)}
    assert indexers == set(handlers._INDEXERS)
