"""One tuning process at a time on a kernel database: an advisory lock beside its files.

meta_schedule's ``JSONDatabase`` appends each record to its files as it is measured, and
``target.json`` holds the run history that ranks them (:mod:`~.records`): two processes
tuning into one database at once would interleave lines and overwrite each other's history.
:func:`db_lock` holds an exclusive ``flock`` on ``<database>/.lock`` for a whole tuning run;
a second process waits for it (saying so once) and then opens the database as the first left
it, so no record is lost. The lock goes with the process, however it ends (``kill -9``
included): the kernel releases it.
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from pathlib import Path

__all__ = ["LOCK_FILE", "db_lock"]

logger = logging.getLogger(__name__)

LOCK_FILE = ".lock"


@contextlib.contextmanager
def db_lock(path):
    """Hold the tuning lock of the database directory ``path`` (created if missing).

    Parameters
    ----------
    path : str or Path
        The database directory.
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logger.warning("kernel database %s is being tuned by another process: waiting "
                           "for it to finish", path)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield path
    finally:
        os.close(fd)  # (closing releases the lock)
