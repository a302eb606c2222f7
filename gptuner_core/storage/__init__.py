"""Study stores: :func:`open_store` opens ``STUDY/study.sqlite`` (see ``storage/_base.py``)."""

from __future__ import annotations

import os

from gptuner_core.storage._base import Event
from gptuner_core.storage._base import StudyStore
from gptuner_core.storage.sqlite import STORE_FILENAME
from gptuner_core.storage.sqlite import SQLiteStudyStore
from gptuner_core.storage.sqlite import file_revision


def open_store(
    study_dir: str | os.PathLike[str],
    readonly: bool = False,
    *,
    synchronous: str = "NORMAL",
) -> SQLiteStudyStore:
    """Open the study store in ``study_dir``.

    Args:
        study_dir: the study folder; a writer creates it (and the store) when missing.
        readonly: open a reader (dashboard, ``gptuner show``): never blocks the writer, raises
            :class:`~gptuner_core.errors.StoreError` on writes and when no study exists.
        synchronous: ``"NORMAL"`` (durable against process kill) or ``"FULL"`` (power loss too).

    Raises:
        StoreError: no study (read-only), a corrupt or foreign file, a newer schema, or a second
            writer on the same study.
    """
    return SQLiteStudyStore(study_dir, readonly=readonly, synchronous=synchronous)


__all__ = [
    "STORE_FILENAME",
    "Event",
    "SQLiteStudyStore",
    "StudyStore",
    "file_revision",
    "open_store",
]
