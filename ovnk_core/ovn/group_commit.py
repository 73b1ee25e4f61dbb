"""Group commit: owners converged by several threads at once share one transaction.

A controller whose every key is a small owner (a service's load balancers, a pod's
ports) pays one Northbound round trip per key, which costs more than computing the
rows; at scale the callers queue behind each other's round trips.  With
several workers, ``GroupCommit.apply`` lets the rows of every worker that is waiting
while a transaction is in flight go out together in the next one: the first waiting
worker takes everything queued, writes it with ``declarative.apply_many`` and wakes
the others.  Nothing waits for company: a lone worker writes at once.

A batch that fails as a whole (an owner refers to a row that does not exist yet, the
connection broke) is written again one submission at a time, so each caller gets its
own outcome — its own ``MissingReference`` or success — as if it had written alone.
Owners of one batch are disjoint (two workers never hold the same key), which
``apply_many`` requires.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ovnk_core.ovn.declarative import ApplyResult, DesiredRow, RowWriter, apply_many
from ovnk_core.ovn.ownership import Owner

Desired = Mapping[Owner, Sequence[DesiredRow]]


@dataclass(eq=False)
class _Submission:
    desired: Desired
    done: bool = False
    result: ApplyResult = field(default_factory=ApplyResult)
    error: BaseException | None = None


class GroupCommit:
    """Writes the owners of concurrent callers in shared transactions.

    :param nb: the writer (``NbWriter``).
    :param max_owners: at most this many owners in one transaction.
    """

    def __init__(self, nb: RowWriter, max_owners: int = 200) -> None:
        self.nb = nb
        self.max_owners = max_owners
        self.transactions = 0  # batches written (for tests and metrics)
        self._cond = threading.Condition()
        self._pending: list[_Submission] = []
        self._busy = False

    def apply(self, desired: Desired) -> ApplyResult:
        """Converge ``desired`` (as ``declarative.apply_many``), perhaps together with other
        callers' owners; returns what the transaction changed (for a shared one: all of it).

        :raises: what ``apply_many`` raises for these owners alone.
        """
        entry = _Submission(desired)
        with self._cond:
            self._pending.append(entry)
            while not entry.done and self._busy:
                self._cond.wait()
            if entry.done:
                return self._outcome(entry)
            self._busy = True
            batch, self._pending = self._take()
        try:
            self._write(batch)
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()
        return self._outcome(entry)

    def _take(self) -> tuple[list[_Submission], list[_Submission]]:
        batch: list[_Submission] = []
        owners = 0
        for index, entry in enumerate(self._pending):
            if batch and owners + len(entry.desired) > self.max_owners:
                return batch, self._pending[index:]
            batch.append(entry)
            owners += len(entry.desired)
        return batch, []

    def _write(self, batch: list[_Submission]) -> None:
        if len(batch) > 1:
            merged: dict[Owner, Sequence[DesiredRow]] = {}
            for entry in batch:
                merged.update(entry.desired)
            try:
                result = apply_many(self.nb, merged)
            except Exception:  # each is written alone below, for its own outcome
                pass
            else:
                self.transactions += 1
                for entry in batch:
                    entry.result, entry.done = result, True
                return
        for entry in batch:
            try:
                entry.result = apply_many(self.nb, entry.desired)
                self.transactions += 1
            except BaseException as exc:  # handed to its caller
                entry.error = exc
            entry.done = True

    @staticmethod
    def _outcome(entry: _Submission) -> ApplyResult:
        if entry.error is not None:
            raise entry.error
        return entry.result
