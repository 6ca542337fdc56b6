"""`hivecat` with every partition write of the catalog API paced and counted, for crash tests.

    python tests/support/paced_cli.py SECONDS relocate --catalog ... (any hivecat arguments)

Each Glue BatchUpdatePartition / Thrift alter_partitions call first sleeps SECONDS (a slow link: the test
watches the journal and kills the process between two writes, it never guesses a time) and counts its
partitions. Exits with hivecat's exit code; the last stderr line is `partitions-written N`.
"""

from __future__ import annotations

import sys
import threading
import time

from hmsclient import hmsclient

from hivecat import aws, cli

written = 0
_counting = threading.Lock()  # Thrift writes chunks from several threads


def _paced(count: int, pace: float) -> None:
    global written
    time.sleep(pace)
    with _counting:
        written += count


def main(argv: list[str]) -> int:
    pace = float(argv[0])
    made = aws._session  # every AWS client hivecat makes comes from a session made here

    def paced_session():
        session = made()
        session.register("before-parameter-build.glue.BatchUpdatePartition",
                         lambda params, **_: _paced(len(params["Entries"]), pace))
        return session
    aws._session = paced_session
    alter = hmsclient.HMSClient.alter_partitions_with_environment_context

    def paced_alter(self, db_name, tbl_name, new_parts, environment_context):
        _paced(len(new_parts), pace)
        return alter(self, db_name, tbl_name, new_parts, environment_context)
    hmsclient.HMSClient.alter_partitions_with_environment_context = paced_alter
    try:
        return cli.main(argv[1:])
    finally:
        print(f"partitions-written {written}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
