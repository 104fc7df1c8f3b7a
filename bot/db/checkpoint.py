"""Folding the write-ahead log back into the database file, on a thread of its own.

SQLite in WAL mode appends every commit to the ``-wal`` file and, by default, the connection whose
commit makes that log pass 1,000 pages copies it back into the database file and fsyncs it: a
checkpoint. On the database thread that is a stall of ~20 ms every ~17 tool turns (a turn writes
~60 pages), during which no conversation's statement runs. Here a second connection runs a
``PASSIVE`` checkpoint, which never blocks writers or readers, at most once per ``interval`` and
only after the database thread did something. The database thread's own automatic checkpoint
stays as a backstop at a higher threshold: under constant writing the log can only start over
when a writer finds it fully copied back, and the backstop's checkpoint, cheap when this one has
done most of the copying, is what makes that happen.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

__all__ = ["Checkpointer"]

log = logging.getLogger(__name__)


class Checkpointer:
    """A thread that checkpoints the database at ``path`` after it was used; :meth:`stop` it."""

    def __init__(self, path: Path, *, interval: float = 0.25) -> None:
        self._path = path
        self._interval = interval
        self._due = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="vaultbot-db-checkpoint", daemon=True)
        self._thread.start()

    def used(self) -> None:
        """The database thread ran something: check the log soon. Cheap enough for every batch; it
        wakes the thread at most once per interval, and never while nothing happens."""
        if not self._due.is_set():
            self._due.set()

    def stop(self) -> None:
        """End the thread and close its connection (the last connection to close checkpoints)."""
        self._stopping.set()
        self._due.set()
        self._thread.join()

    def _serve(self) -> None:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        failing = False
        try:
            while True:
                self._due.wait()
                if self._stopping.is_set():
                    return
                self._due.clear()
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:
                    # The backstop on the database thread still checkpoints; say so once per streak.
                    if not failing:
                        log.warning("background checkpoint of %s failed: %s", self._path.name, exc)
                    failing = True
                else:
                    failing = False
                if self._stopping.wait(self._interval):
                    return
        finally:
            conn.close()
