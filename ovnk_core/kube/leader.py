"""Leader election on a coordination.k8s.io/v1 Lease.

One process of a role (cluster-manager, controller) does the writing; the
others wait.  The candidate acquires the Lease when it is free or expired
(``renewTime + leaseDurationSeconds`` in the past), renews it every
``retry_period``, and gives up leadership — calling ``on_stopped`` — as soon
as a renewal has not succeeded for ``renew_deadline``, before another
candidate can take over.  All writes use optimistic concurrency
(resourceVersion), so two candidates never both win.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from ovnk_core.kube.resources import LEASES

log = logging.getLogger(__name__)


def _micro_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    for fmt in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


class LeaderElector:
    def __init__(self, client: KubeClient, name: str, namespace: str, identity: str,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0,
                 retry_period: float = 2.0, on_started: Callable[[], None] | None = None,
                 on_stopped: Callable[[], None] | None = None) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
        self.client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_started = on_started
        self.on_stopped = on_stopped
        self.is_leader = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this candidate holds the Lease afterwards."""
        now = datetime.now(UTC)
        spec = {"holderIdentity": self.identity,
                "leaseDurationSeconds": int(self.lease_duration),
                "renewTime": _micro_time(now)}
        try:
            lease = self.client.get(LEASES, self.name, self.namespace)
        except NotFound:
            try:
                self.client.create(LEASES, {
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": dict(spec, acquireTime=_micro_time(now), leaseTransitions=0)},
                    namespace=self.namespace)
                return True
            except (AlreadyExists, Conflict):
                return False
        current = lease.get("spec") or {}
        holder = current.get("holderIdentity")
        renewed = _parse(current.get("renewTime"))
        duration = float(current.get("leaseDurationSeconds") or self.lease_duration)
        expired = renewed is None or (now - renewed).total_seconds() > duration
        if holder and holder != self.identity and not expired:
            return False
        new_spec: JSON = dict(current, **spec)
        if holder != self.identity:
            new_spec["acquireTime"] = _micro_time(now)
            new_spec["leaseTransitions"] = int(current.get("leaseTransitions") or 0) + 1
        lease["spec"] = new_spec
        try:
            self.client.update(LEASES, lease)
        except Conflict:
            return False
        return True

    def run(self) -> None:
        """Campaign until stopped; call the callbacks on each change of leadership."""
        last_renew = 0.0
        while not self._stop.is_set():
            try:
                held = self.try_acquire_or_renew()
            except ApiError as exc:
                log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
                held = False
            except Exception as exc:  # network errors must not end the campaign
                log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
                held = False
            now = time.monotonic()
            if held:
                last_renew = now
                if not self.is_leader.is_set():
                    log.info("lease %s/%s: %s became leader", self.namespace, self.name,
                             self.identity)
                    self.is_leader.set()
                    if self.on_started:
                        self.on_started()
            elif self.is_leader.is_set() and now - last_renew >= self.renew_deadline:
                self._lose()
            self._stop.wait(self.retry_period)
        if self.is_leader.is_set():
            self._release()
            self._lose()

    def _lose(self) -> None:
        log.info("lease %s/%s: %s stopped leading", self.namespace, self.name, self.identity)
        self.is_leader.clear()
        if self.on_stopped:
            self.on_stopped()

    def _release(self) -> None:
        try:
            lease = self.client.get(LEASES, self.name, self.namespace)
            if (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = None
                lease["spec"]["renewTime"] = None
                self.client.update(LEASES, lease)
        except ApiError as exc:
            log.warning("lease %s/%s: release failed: %s", self.namespace, self.name, exc)

    def start(self) -> LeaderElector:
        self._thread = threading.Thread(target=self.run, name=f"lease-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.retry_period + 10)
