"""Controller retry semantics on a fake clock: not-ready, temporary, permanent, slow lane."""

from __future__ import annotations

from ovnk_core.errors import NotReady, PermanentError, TemporaryError
from ovnk_core.kube.backoff import Backoff, FakeClock
from ovnk_core.kube.controller import Controller


class Script:
    """A reconcile function that raises what the test tells it to, per call."""

    def __init__(self, *outcomes: BaseException | None) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[str] = []

    def __call__(self, key: str) -> None:
        self.calls.append(key)
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is not None:
            raise outcome


def make(script: Script, **kwargs) -> tuple[Controller, FakeClock, list]:  # type: ignore[no-untyped-def]
    clock = FakeClock()
    reports: list[tuple[str, str, str]] = []
    controller = Controller("test", script, clock=clock,
                            backoff=Backoff(base=1.0, cap=8.0, jitter=0.0),
                            on_error=lambda key, exc, kind: reports.append((key, kind, str(exc))),
                            **kwargs)
    return controller, clock, reports


def step(controller: Controller) -> str | None:
    key = controller.queue.get(timeout=0)
    if key is not None:
        controller.process(key)
        controller.queue.done(key)
    return key


def test_temporary_errors_back_off_exponentially_then_reset() -> None:
    script = Script(RuntimeError("boom"), RuntimeError("boom"), None)
    controller, clock, _ = make(script)
    controller.queue.add("ns/a")
    assert step(controller) == "ns/a"
    assert controller.queue.pending_delayed() == {"ns/a": clock.now() + 1.0}
    clock.advance(1.0)
    assert step(controller) == "ns/a"
    assert controller.queue.pending_delayed() == {"ns/a": clock.now() + 2.0}
    assert controller.failures("ns/a") == 2
    clock.advance(2.0)
    assert step(controller) == "ns/a"
    assert controller.failures("ns/a") == 0 and not controller.queue.pending_delayed()


def test_temporary_error_may_choose_its_delay() -> None:
    controller, clock, _ = make(Script(TemporaryError("api busy", delay=7)))
    controller.queue.add("k")
    step(controller)
    assert controller.queue.pending_delayed() == {"k": clock.now() + 7}


def test_not_ready_does_not_spend_the_failure_budget() -> None:
    script = Script(*[NotReady("no subnet yet")] * 40)
    controller, clock, reports = make(script, max_failures=3, not_ready_delay=0.5)
    controller.queue.add("k")
    for _ in range(40):
        assert step(controller) == "k"
        clock.advance(0.5)
    assert controller.failures("k") == 0
    assert controller.stats.not_ready == 40 and not controller.stats.slow_lane and not reports


def test_permanent_error_is_reported_and_not_requeued() -> None:
    controller, clock, reports = make(Script(PermanentError("bad spec", reason="Invalid")))
    controller.queue.add("k")
    step(controller)
    assert reports == [("k", "permanent", "bad spec")]
    clock.advance(3600)
    assert step(controller) is None
    controller.queue.add("k")  # the object changed: reconciled again
    assert step(controller) == "k"


def test_after_the_budget_the_key_moves_to_the_slow_lane_and_is_never_dropped() -> None:
    script = Script(*[RuntimeError("range is full")] * 6)
    controller, clock, reports = make(script, max_failures=3, slow_lane_period=300)
    controller.queue.add("k")
    for _ in range(3):
        step(controller)
        clock.advance(8)
    assert controller.failures("k") == 3 and not controller.stats.slow_lane
    step(controller)  # 4th failure: slow lane
    assert controller.stats.slow_lane == {"k"}
    assert reports == [("k", "slow-lane", "range is full")]
    assert controller.queue.pending_delayed() == {"k": clock.now() + 300}
    clock.advance(299)
    assert step(controller) is None
    clock.advance(1)
    assert step(controller) == "k"  # retried, reported once only
    assert len(reports) == 1
    clock.advance(300)
    step(controller)  # 6th failure
    clock.advance(300)
    assert step(controller) == "k"  # success finally
    assert not controller.stats.slow_lane and controller.failures("k") == 0


def test_not_ready_with_backoff_waits_longer_without_spending_budget() -> None:
    script = Script(*[NotReady("network in use", backoff=True)] * 5)
    controller, clock, reports = make(script, max_failures=2, not_ready_delay=0.5)
    controller.queue.add("k")
    delays = []
    for _ in range(5):
        assert step(controller) == "k"
        due = controller.queue.pending_delayed()["k"]
        delays.append(due - clock.now())
        clock.advance(due - clock.now())
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert controller.failures("k") == 0 and not controller.stats.slow_lane and not reports


def test_metrics_report_results_slow_lane_and_depth() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from ovnk_core.metrics import ControllerCollector

    script = Script(*[RuntimeError("boom")] * 3, NotReady("wait"), None)
    controller, clock, _ = make(script, max_failures=2)
    registry = CollectorRegistry()
    registry.register(ControllerCollector(lambda: [controller]))
    controller.queue.add("k")
    for _ in range(3):
        step(controller)
        clock.advance(300)
    controller.queue.add("other")
    text = generate_latest(registry).decode()
    assert 'ovnkube_controller_reconcile_total{controller="test",result="error"} 3.0' in text
    assert 'ovnkube_controller_slow_lane_keys{controller="test"} 1.0' in text
    assert 'ovnkube_controller_workqueue_depth{controller="test"} 2.0' in text
    assert step(controller) == "other"  # not ready yet
    clock.advance(300)
    assert {step(controller), step(controller)} == {"k", "other"}  # both succeed now
    text = generate_latest(registry).decode()
    assert 'result="not-ready"} 1.0' in text and 'result="success"} 2.0' in text
    assert 'ovnkube_controller_slow_lane_keys{controller="test"} 0.0' in text


def test_retry_waiting_reconciles_waiting_and_failing_keys_now() -> None:
    """What they waited for is back (OVN Northbound reachable again): no key sits out its
    backoff, the slow lane's included; keys that succeeded are left alone."""
    script = Script(NotReady("NB unreachable", delay=60), RuntimeError("boom"), None,
                    RuntimeError("boom"))
    controller, clock, _ = make(script, max_failures=1, slow_lane_period=300)
    for key in ("waits", "fails", "done"):
        controller.queue.add(key)
    assert [step(controller) for _ in range(3)] == ["waits", "fails", "done"]
    clock.advance(1.0)
    assert step(controller) == "fails"  # its second failure: the slow lane (300s)
    assert controller.stats.slow_lane == {"fails"}
    assert set(controller.queue.pending_delayed()) == {"waits", "fails"}
    assert controller.retry_waiting() == 2
    assert sorted(filter(None, [step(controller), step(controller), step(controller)])) == \
        ["fails", "waits"]
    assert not controller.queue.pending_delayed() and not controller.stats.slow_lane
