"""Copying an IDL table's rows while another thread inserts and deletes rows."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from ovs.db.custom_index import IndexedRows

from ovnk_core.ovn.nb import stable_rows


@pytest.fixture(autouse=True)
def _switch_threads_often() -> Iterator[None]:
    """Let the interpreter switch threads every few bytecodes, so races show at once."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


class _Row:
    def __init__(self, row_uuid: uuid.UUID) -> None:
        self.uuid = row_uuid


@contextmanager
def churned_table(size: int = 2000) -> Iterator[IndexedRows]:
    """An IDL row mapping of ``size`` rows that another thread keeps inserting into and
    deleting from, as the IDL thread does while updates arrive."""
    rows = IndexedRows(SimpleNamespace(name="Logical_Switch", columns={}))
    for _ in range(size):
        key = uuid.uuid4()
        rows[key] = _Row(key)
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            key = uuid.uuid4()
            rows[key] = _Row(key)
            del rows[key]

    writer = threading.Thread(target=churn, daemon=True)
    writer.start()
    try:
        yield rows
    finally:
        stop.set()
        writer.join()


def test_stable_rows_copies_while_another_thread_changes_the_table() -> None:
    with churned_table() as rows:
        for _ in range(300):
            copied = stable_rows(rows)
            assert len(copied) >= 2000
            assert all(isinstance(row, _Row) for row in copied)


def test_iterating_the_mapping_itself_is_what_breaks() -> None:
    """The guard above is needed: plain iteration of the same mapping fails under churn."""
    deadline = time.monotonic() + 20
    with churned_table() as rows, pytest.raises(RuntimeError, match="changed size"):
        while time.monotonic() < deadline:
            list(rows.values())
