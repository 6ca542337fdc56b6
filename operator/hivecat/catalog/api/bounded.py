"""Work items on a few threads while their bookkeeping stays on the calling thread.

The API driver writes chunks through the backend on worker threads but keeps every journal read and write
on the thread that called it: the journal may be SQLite, whose connections belong to one thread, and one
writer at a time keeps its updates ordered and simple.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

Item, Job, Result = TypeVar("Item"), TypeVar("Job"), TypeVar("Result")
_END = object()


def run_bounded(items: Iterable[Item], prepare: Callable[[Item], Job], work: Callable[[Job], Result],
                finish: Callable[[Result], None], workers: int) -> None:
    """`finish(work(prepare(item)))` for every item, with at most `workers` `work` calls running at once.

    `prepare` and `finish` run on the calling thread: `prepare` just before its item starts, `finish` as
    each one ends (in the order they end). When a `work` call raises, no new item starts; the running ones
    end and are finished, then its error is raised. An error on the calling thread (in `prepare` or
    `finish`, or an interrupt) waits for the running items without finishing them, and is raised.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    queue = iter(items)
    failure: BaseException | None = None
    running: set[Future[Result]] = set()
    with ThreadPoolExecutor(workers, thread_name_prefix="hivecat-chunk") as pool:
        while True:
            while failure is None and len(running) < workers:
                item = next(queue, _END)
                if item is _END:
                    break
                running.add(pool.submit(work, prepare(item)))
            if not running:
                break
            ended, running = wait(running, return_when=FIRST_COMPLETED)
            for future in ended:
                error = future.exception()
                if error is None:
                    finish(future.result())
                elif failure is None:
                    failure = error  # the first one is raised; a later one is most likely its consequence
    if failure is not None:
        raise failure

