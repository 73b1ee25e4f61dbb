"""The local cluster's containers and probes, without processes: which images and commands
run, how probes read and count, and the status the kubelet stand-in builds from them."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from ovnk_local import probes, workloads
from ovnk_local.cgroups import KubeletCgroup, cgroup2_mount, kubelet_cgroup_flags
from ovnk_local.pod_status import (
    build_pod_status,
    container_status,
    grace_period,
    pod_phase,
    restart_delay,
    should_restart,
)
from ovnk_local.runtime import kill_leftovers, process_start_time
from ovnk_local.workloads.netexec import client_address, udp_reply

from ovnk_core.testing.waiting import wait_until

AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"


# -- images and commands ------------------------------------------------------------------------
@pytest.mark.parametrize(("container", "expected"), [
    ({"image": AGNHOST, "args": ["netexec", "--http-port=8080"]},
     workloads.Workload("netexec", http_port=8080, udp_port=8081)),
    ({"image": "agnhost:2.40", "args": ["netexec", "--http-port", "80", "--udp-port=-1"]},
     workloads.Workload("netexec", http_port=80, udp_port=-1)),
    ({"image": AGNHOST, "command": ["/agnhost", "netexec"], "args": ["-udp-port=9000"]},
     workloads.Workload("netexec", http_port=8080, udp_port=9000)),
    ({"image": AGNHOST, "args": ["pause"]}, workloads.Workload("pause")),
    ({"image": "agnhost"}, workloads.Workload("pause")),
    ({"image": "registry.k8s.io/pause:3.9"}, workloads.Workload("pause")),
    ({"image": "k8s.gcr.io/pause@sha256:abcd", "command": ["/pause"]},
     workloads.Workload("pause")),
])
def test_supported_images_and_commands(container: dict[str, Any],
                                       expected: workloads.Workload) -> None:
    assert workloads.resolve(container) == expected


@pytest.mark.parametrize(("container", "message"), [
    ({"image": "nginx:1.27"},
     "image 'nginx:1.27' is not supported: unknown image (ovnk local runs only "
     "registry.k8s.io/pause and registry.k8s.io/e2e-test-images/agnhost (netexec, pause))"),
    ({"image": AGNHOST, "args": ["serve-hostname"]},
     f"image '{AGNHOST}' with args ['serve-hostname'] is not supported: agnhost subcommand "
     "'serve-hostname' is not supported"),
    ({"image": AGNHOST, "command": ["sh", "-c", "sleep 1"]},
     f"image '{AGNHOST}' with command ['sh', '-c', 'sleep 1'] is not supported: agnhost's "
     "command must be the agnhost binary"),
    ({"image": AGNHOST, "args": ["netexec", "--shell"]},
     "netexec flag '--shell' is not supported"),
    ({"image": AGNHOST, "args": ["netexec", "--http-port=70000"]},
     "--http-port=70000 is not a port"),
    ({"image": AGNHOST, "args": ["netexec", "--sctp-port=9"]},
     "netexec --sctp-port is not supported"),
    ({"image": "pause", "args": ["x"]}, "the pause image takes no command or arguments"),
])
def test_anything_else_is_unsupported_with_a_reason(container: dict[str, Any],
                                                    message: str) -> None:
    with pytest.raises(workloads.Unsupported) as caught:
        workloads.resolve(container)
    assert message in str(caught.value)


def test_the_launcher_gets_the_workloads_own_arguments() -> None:
    assert workloads.Workload("netexec", 80, -1).argv() == [
        "netexec", "--http-port=80", "--udp-port=-1"]
    assert workloads.Workload("pause").argv() == ["pause"]
    assert workloads.repository_name("localhost:5000/a/b/agnhost:2.1@sha256:x") == "agnhost"


def test_netexec_udp_answers_and_client_addresses() -> None:
    assert udp_reply("echo hi there\n", "pod", "1.2.3.4:5") == "hi there"
    assert udp_reply("hostname", "pod", "1.2.3.4:5") == "pod"
    assert udp_reply("clientip", "pod", "1.2.3.4:5") == "1.2.3.4:5"
    assert udp_reply("what", "pod", "1.2.3.4:5") is None
    assert client_address("::ffff:10.0.0.1", 80) == "10.0.0.1:80"
    assert client_address("fd00::1", 80) == "[fd00::1]:80"


# -- probes -------------------------------------------------------------------------------------
def test_probe_defaults_are_kubernetes_defaults() -> None:
    probe = probes.parse_probe(probes.READINESS, {"httpGet": {"port": "http"}})
    assert (probe.handler, probe.path, probe.scheme, probe.port) == ("http", "/", "HTTP", "http")
    assert (probe.initial_delay, probe.period, probe.timeout, probe.success_threshold,
            probe.failure_threshold) == (0.0, 10.0, 1.0, 1, 3)
    liveness = probes.parse_probe(probes.LIVENESS, {
        "tcpSocket": {"port": 80}, "periodSeconds": 2, "successThreshold": 3,
        "failureThreshold": 1, "initialDelaySeconds": 5, "timeoutSeconds": 4,
        "terminationGracePeriodSeconds": 7})
    assert (liveness.handler, liveness.period, liveness.success_threshold,
            liveness.failure_threshold, liveness.initial_delay, liveness.timeout,
            liveness.termination_grace) == ("tcp", 2.0, 1, 1, 5.0, 4.0, 7.0)
    exec_probe = probes.parse_probe(probes.STARTUP, {"exec": {"command": ["cat", "/x"]}})
    assert exec_probe.command == ("cat", "/x")
    with pytest.raises(probes.InvalidProbe):
        probes.parse_probe(probes.READINESS, {"periodSeconds": 1})
    container = {"name": "c", "ports": [{"name": "http", "containerPort": 8080}],
                 "readinessProbe": {"httpGet": {"port": "http"}},
                 "startupProbe": {"tcpSocket": {"port": 1}}}
    assert [p.kind for p in probes.container_probes(container)] == ["startup", "readiness"]
    assert probes.resolve_port("http", container) == 8080
    assert probes.resolve_port("9000", container) == 9000
    with pytest.raises(probes.InvalidProbe, match="'metrics' is not a named port"):
        probes.resolve_port("metrics", container)


class Script:
    """A probe runner answering from a list (then the last answer, forever)."""

    def __init__(self, answers: list[bool]) -> None:
        self.answers = answers
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, _spec: probes.ProbeSpec) -> tuple[bool, str]:
        with self.lock:
            answer = self.answers[min(self.calls, len(self.answers) - 1)]
            self.calls += 1
        return answer, "" if answer else "nope"


def manager() -> tuple[probes.ProbeManager, list[tuple[str, bool, bool]]]:
    reports: list[tuple[str, bool, bool]] = []
    return probes.ProbeManager(lambda _c, kind, ok, _m, changed: reports.append(
        (kind, ok, changed))), reports


def test_readiness_needs_its_success_threshold_and_falls_after_its_failures() -> None:
    probe_manager, reports = manager()
    spec = probes.ProbeSpec(probes.READINESS, probes.TCP, period=0.01, success_threshold=2,
                            failure_threshold=2)
    script = Script([True, True, False, False, True])
    try:
        probe_manager.add("c1", [spec], lambda _spec: script)
        assert probe_manager.result("c1", probes.READINESS) is False  # not ready at first
        wait_until(lambda: len(reports) >= 5, timeout=5)
        assert reports[:5] == [("readiness", True, False), ("readiness", True, True),
                               ("readiness", False, False), ("readiness", False, True),
                               ("readiness", True, False)]
    finally:
        probe_manager.stop()


def test_liveness_holds_after_it_failed_and_waits_for_startup() -> None:
    probe_manager, reports = manager()
    startup = probes.ProbeSpec(probes.STARTUP, probes.TCP, period=0.01, failure_threshold=5)
    liveness = probes.ProbeSpec(probes.LIVENESS, probes.TCP, period=0.01, failure_threshold=2)
    scripts = {probes.STARTUP: Script([False, True]), probes.LIVENESS: Script([False])}
    try:
        probe_manager.add("c1", [startup, liveness], lambda spec: scripts[spec.kind])
        assert probe_manager.result("c1", probes.STARTUP) is None
        assert probe_manager.result("c1", probes.LIVENESS) is True
        wait_until(lambda: probe_manager.result("c1", probes.LIVENESS) is False, timeout=5)
        calls = scripts[probes.LIVENESS].calls
        assert calls == 2 and scripts[probes.STARTUP].calls == 2  # both held now
        assert [r for r in reports if r[0] == probes.LIVENESS] == [
            ("liveness", False, False), ("liveness", False, True)]
        probe_manager.remove("c1")
        assert not probe_manager.has("c1", probes.LIVENESS)
    finally:
        probe_manager.stop()


def test_initial_delay_and_a_seeded_readiness() -> None:
    probe_manager, reports = manager()
    spec = probes.ProbeSpec(probes.READINESS, probes.TCP, period=0.01, initial_delay=60)
    try:
        probe_manager.add("c1", [spec], lambda _spec: Script([False]), ready=True)
        assert probe_manager.result("c1", probes.READINESS) is True
        assert reports == []
    finally:
        probe_manager.stop()


# -- status -------------------------------------------------------------------------------------
POD = {"metadata": {"name": "p", "namespace": "n", "uid": "u"},
       "spec": {"containers": [{"name": "a", "image": "agnhost"},
                               {"name": "b", "image": "nginx"}]}}


def test_status_follows_the_containers() -> None:
    running = container_status(POD["spec"]["containers"][0],  # type: ignore[index]
                               {"running": {"startedAt": "t0"}}, ready=True, started=True,
                               container_id="ovnk-local://u/a/7")
    waiting = container_status(POD["spec"]["containers"][1],  # type: ignore[index]
                               {"waiting": {"reason": "UnsupportedImage", "message": "m"}})
    assert running == {"name": "a", "image": "agnhost", "imageID": "", "ready": True,
                       "restartCount": 0, "started": True,
                       "state": {"running": {"startedAt": "t0"}}, "lastState": {},
                       "containerID": "ovnk-local://u/a/7"}
    status = build_pod_status(POD, ["10.244.0.5"], ["172.18.0.2"], "t1", [running, waiting])
    assert status["phase"] == "Pending"
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Ready"]["status"] == "False"
    assert conditions["Ready"]["message"] == "containers with unready status: [b]"
    assert status["podIPs"] == [{"ip": "10.244.0.5"}] and status["hostIP"] == "172.18.0.2"
    ready = build_pod_status({**POD, "status": status}, ["10.244.0.5"], [], "t2", [running])
    assert ready["phase"] == "Running"
    conditions = {c["type"]: c for c in ready["conditions"]}
    assert conditions["Ready"] == {"type": "Ready", "status": "True", "lastTransitionTime": "t2"}
    assert conditions["PodScheduled"]["lastTransitionTime"] == "t1"  # kept: unchanged


def test_phase_restart_policy_and_backoff() -> None:
    def ended(code: int, waiting: bool = False) -> dict[str, Any]:
        terminated = {"exitCode": code}
        if waiting:
            return {"state": {"waiting": {}}, "lastState": {"terminated": terminated}}
        return {"state": {"terminated": terminated}}

    assert pod_phase("Always", [ended(1, waiting=True)]) == "Running"
    assert pod_phase("Never", [ended(0), ended(0)]) == "Succeeded"
    assert pod_phase("Never", [ended(0), ended(2)]) == "Failed"
    assert pod_phase("OnFailure", [ended(0)]) == "Succeeded"
    assert pod_phase("Always", [{"state": {"waiting": {}}}]) == "Pending"
    assert (should_restart("Always", 0), should_restart("OnFailure", 0),
            should_restart("OnFailure", 1), should_restart("Never", 1)) == (
        True, False, True, False)
    assert [restart_delay(n, 10, 300) for n in range(7)] == [0, 10, 20, 40, 80, 160, 300]
    assert grace_period({"spec": {"terminationGracePeriodSeconds": 5}}) == 5.0
    assert grace_period({"metadata": {"deletionGracePeriodSeconds": 0},
                         "spec": {"terminationGracePeriodSeconds": 5}}) == 0.0
    assert grace_period({}) == 30.0


# -- leftovers --------------------------------------------------------------------------------
def test_leftover_containers_are_killed_by_record(tmp_path: Path) -> None:
    """What ``ovnk local down`` and ``up`` do with containers a kubelet left running; a
    record whose pid now belongs to another process (start time differs) is not killed."""
    sleeper = subprocess.Popen(["sleep", "60"])
    other = subprocess.Popen(["sleep", "60"])
    try:
        state_dir = tmp_path / "containers"
        (state_dir / "uid1").mkdir(parents=True)
        (state_dir / "uid1" / "c.json").write_text(json.dumps(
            {"pid": sleeper.pid, "start_time": process_start_time(sleeper.pid)}))
        (state_dir / "uid1" / "reused.json").write_text(json.dumps(
            {"pid": other.pid, "start_time": -1}))
        assert kill_leftovers(state_dir) == [sleeper.pid]
        assert sleeper.wait(timeout=5) == -9
        assert other.poll() is None
        assert list(state_dir.iterdir()) == []
    finally:
        for process in (sleeper, other):
            process.kill()
            process.wait()


# -- the kubelet cgroup file --------------------------------------------------------------------
def test_kubelet_cgroup_file_and_mount_lookup(tmp_path: Path) -> None:
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n")
    assert cgroup2_mount(mountinfo) == Path("/sys/fs/cgroup/unified")
    mountinfo.write_text("30 25 0:26 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n")
    assert cgroup2_mount(mountinfo) is None
    recorded = KubeletCgroup("/sys/fs/cgroup", "ovnk-local/ovnkabc123/ovn-worker/kubelet")
    file = tmp_path / "kubelet-cgroup.json"
    file.write_text(recorded.to_json())
    assert KubeletCgroup.read(file) == recorded and recorded.level == 4
    assert recorded.directory == Path("/sys/fs/cgroup/ovnk-local/ovnkabc123/ovn-worker/kubelet")
    file.write_text(KubeletCgroup(error="cgroup v2 is not mounted").to_json())
    assert KubeletCgroup.read(file).directory is None
    assert KubeletCgroup.read(tmp_path / "missing").error.startswith("cannot read")


def test_the_node_agent_gets_its_kubelet_cgroup_as_a_flag(tmp_path: Path) -> None:
    file = tmp_path / "kubelet-cgroup.json"
    file.write_text(KubeletCgroup("/sys/fs/cgroup/unified", "ovnk-local/c/n/kubelet").to_json())
    assert kubelet_cgroup_flags(tmp_path) == ["--kubelet-cgroup-path", "ovnk-local/c/n/kubelet"]
    # none when the node has no kubelet cgroup: the agent reports that itself
    file.write_text(KubeletCgroup(error="cgroup v2 is not mounted").to_json())
    assert kubelet_cgroup_flags(tmp_path) == []
    assert kubelet_cgroup_flags(tmp_path / "missing") == []
