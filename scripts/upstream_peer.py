#!/usr/bin/env python3
"""Run upstream OVN-Kubernetes' own ``ovnkube`` against an ``ovnk local`` cluster and check it.

A developer aid, not a test (CI has no upstream build): it takes an ``ovnkube`` binary
already built from an upstream snapshot and a root holding the OVN release that binary
needs (as ``docs`` in ``/work/shared/docs/upstream-peer.md`` describe; this builds and
fetches nothing), then

1. brings up ``ovnk local up --no-dataplane`` in ``--dir``, with the API server's access
   log on (``OVNK_APISERVER_LOG_LEVEL=DEBUG``);
2. stops ovnk's own writers (its cluster manager and zone controller) and removes the node
   annotations its cluster manager allocated, so upstream allocates them itself;
3. starts, per node, an OVN zone (NB, SB, northd) from the root, upstream's cluster
   manager and one ``--init-ovnkube-controller`` per node (upstream is interconnect-only:
   zone = node), all with the admin's kubeconfig and no change to their code;
4. waits until every informer of every component has synced and every controller started
   (read from their logs), applies the workshop's namespaces, UDNs and pods and waits until
   upstream created each UDN's NAD, annotated every pod with the default network and its
   primary UDN, and gave the pod a port with those addresses in its node's zone;
5. prints a report (what synced, what upstream rendered, every request the API server
   refused, the errors and warnings both sides logged) and takes everything down
   (``--keep`` leaves it running; ``--down`` takes a kept run down).

Run it with the virtualenv's Python: ``.venv/bin/python scripts/upstream_peer.py --root
ROOT --ovnkube ROOT/src/ovnkube``.  Exit status 0 when every check passed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from upstream_peer_logs import LogState, counted, logged_problems, refused_requests
from upstream_peer_ovn import PeerError, Upstream, Zone, run

REPO = Path(__file__).resolve().parent.parent
WORKSHOP = REPO / "examples" / "workshop"
WORKSHOP_FILES = ("00-namespaces.yaml", "10-networks.yaml", "20-pods.yaml")
NODE_ID, NODE_SUBNETS = "k8s.ovn.org/node-id", "k8s.ovn.org/node-subnets"
MARKER = "upstream-peer.json"  # what this script started, for --down and the next run
# upstream's flags for the cluster ovnk local makes (its settings: /16 pods in /24s per node,
# the 10.96.0.0/16 service range, a /17 masquerade subnet)
UPSTREAM_FLAGS = ("--enable-multi-network", "--enable-network-segmentation",
                  "--cluster-subnets", "10.244.0.0/16/24", "--k8s-service-cidr", "10.96.0.0/16",
                  "--gateway-v4-masquerade-subnet", "169.254.0.0/17", "--loglevel", "4")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for(what: str, condition: Callable[[], bool], timeout: float,
             failed: Callable[[], str | None] = lambda: None) -> float:
    """Poll ``condition`` until true; seconds it took.  ``failed`` names a reason to stop."""
    start = time.monotonic()
    while not condition():
        reason = failed()
        if reason:
            raise PeerError(f"{what}: {reason}")
        if time.monotonic() - start > timeout:
            raise PeerError(f"{what}: not after {timeout:.0f}s")
        time.sleep(0.5)
    return time.monotonic() - start


# -- the processes this script starts ------------------------------------------------------
@dataclass
class Started:
    """What this script started in ``dir``: pids and pidfiles, kept in ``MARKER``."""

    dir: Path
    pids: dict[str, int] = field(default_factory=dict)
    pidfiles: list[str] = field(default_factory=list)
    cluster: bool = False

    @classmethod
    def load(cls, directory: Path) -> Started:
        raw = json.loads((directory / MARKER).read_text())
        return cls(directory, raw["pids"], raw["pidfiles"], raw["cluster"])

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / MARKER).write_text(json.dumps(
            {"pids": self.pids, "pidfiles": self.pidfiles, "cluster": self.cluster}))

    def down(self, ovnk: Path) -> None:
        """Stop upstream's processes, then the zones, then the ovnk local cluster."""
        pids = list(self.pids.values())
        for pidfile in self.pidfiles:
            path = Path(pidfile)
            if path.exists():
                pids.append(int(path.read_text().split()[0]))
        for pid in pids:
            stop(pid, str(self.dir))
        if self.cluster:
            subprocess.run([str(ovnk), "local", "down", "--dir", str(self.dir)], check=False,
                           stdout=subprocess.DEVNULL)
        self.pids, self.pidfiles, self.cluster = {}, [], False
        self.save()


def stop(pid: int, mark: str, grace: float = 10.0) -> None:
    """Stop ``pid`` if it is still one of ours: its command line names our directory (a pid
    of a previous run may since have gone to another program)."""
    try:
        if mark not in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
            return
        os.kill(pid, signal.SIGTERM)
    except (FileNotFoundError, ProcessLookupError):
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:  # not ours (a daemon): poll for it to be gone
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def spawn(args: list[str], log: Path, env: dict[str, str] | None = None) -> int:
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return proc.pid


def alive(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == 0
    except ChildProcessError:
        return False


# -- the ovnk local cluster ------------------------------------------------------------------
class Cluster:
    """The ``ovnk local`` cluster, driven through its CLI and kubectl."""

    def __init__(self, directory: Path, ovnk: Path) -> None:
        self.dir, self.ovnk = directory, ovnk
        self.kubeconfig = directory / "kubeconfig"

    def up(self, nodes: int) -> None:
        env = {**os.environ, "OVNK_APISERVER_LOG_LEVEL": "DEBUG"}
        done = subprocess.run([str(self.ovnk), "local", "up", "--no-dataplane", "--nodes",
                               str(nodes), "--dir", str(self.dir)], env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise PeerError(f"ovnk local up: {done.stderr.strip() or done.stdout.strip()}")

    def stop_ovnk_writers(self) -> None:
        """Stop ovnk's cluster manager and zone controller for good (the supervisor leaves a
        record that is not wanted alone), then remove what its cluster manager allocated on
        the nodes: upstream's allocates it again, as on a cluster it runs alone."""
        from ovnk_local.cluster import OVNK_COMPONENTS, LocalCluster
        from ovnk_local.supervisor import terminate

        from ovnk_core.admission.annotations import CLUSTER_MANAGER_NODE_ANNOTATIONS

        cluster = LocalCluster(self.dir)
        with cluster.states.update() as state:
            for name in OVNK_COMPONENTS:
                state.processes[name].wanted = False
        state = cluster.state()
        for name in OVNK_COMPONENTS:
            terminate(state.processes[name])
        removals = [f"{key}-" for key in sorted(CLUSTER_MANAGER_NODE_ANNOTATIONS)]
        for node in self.nodes():
            self.kubectl("annotate", "node", node["metadata"]["name"], *removals)

    def kubectl(self, *args: str) -> str:
        return run(["kubectl", "--kubeconfig", str(self.kubeconfig), *args])

    def get(self, *args: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = json.loads(self.kubectl("get", *args, "-o", "json"))["items"]
        return items

    def nodes(self) -> list[dict[str, Any]]:
        return self.get("nodes")


# -- upstream's processes --------------------------------------------------------------------
@dataclass
class Component:
    """One upstream ``ovnkube`` process and what its log says about it."""

    name: str
    log: Path
    pid: int
    milestone: str  # the line that says it started its controllers

    def synced(self) -> bool:
        state = LogState.read(self.log)
        return state.milestone(self.milestone) and not state.unsynced()

    def failed(self) -> str | None:
        if alive(self.pid):
            return None
        tail = self.log.read_text(errors="replace").splitlines()[-5:]
        return f"{self.name} exited; its log ends:\n    " + "\n    ".join(tail)


def start_upstream(upstream: Upstream, cluster: Cluster, nodes: list[str], peer: Path,
                   started: Started) -> list[Component]:
    """Upstream's cluster manager (on the first node) and one zone controller per node."""
    bin_dir = peer / "bin"
    upstream.write_wrappers(bin_dir)
    (peer / "logs").mkdir(parents=True, exist_ok=True)
    common = [*UPSTREAM_FLAGS, "--k8s-kubeconfig", str(cluster.kubeconfig)]
    components = []

    def launch(name: str, args: list[str], milestone: str,
               env: dict[str, str] | None = None) -> None:
        log = peer / "logs" / f"{name.replace(' ', '-')}.log"
        pid = spawn([str(upstream.ovnkube), *args, *common, "--metrics-bind-address",
                     f"127.0.0.1:{free_port()}"], log, env)
        started.pids[name] = pid
        started.save()
        components.append(Component(name, log, pid, milestone))

    launch("cluster-manager", ["--init-cluster-manager", nodes[0]],
           "Starting user-defined network controllers")
    for node in nodes:
        zone = Zone(node, peer / "zones" / node)
        started.pidfiles += zone.pidfiles
        started.save()
        zone.start(upstream)
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
               "OVN_NB_DB": zone.nb, "OVN_SB_DB": f"unix:{zone.dir}/ovnsb_db.sock"}
        launch(f"controller {node}", ["--init-ovnkube-controller", node,
                                      "--nb-run-dir", f"{zone.dir}/", "--sb-run-dir",
                                      f"{zone.dir}/"], "Completing all the Watchers", env)
    return components


def wait_synced(components: list[Component], timeout: float) -> None:
    """Until each component synced every informer and started its controllers; then it must
    stay so for a few seconds (a controller added later waits for its caches again)."""
    for component in components:
        wait_for(f"{component.name} syncing its informers", component.synced, timeout,
                 component.failed)
    wait_for("the components staying synced", lambda: _stable(components), timeout)


def _stable(components: list[Component], quiet: float = 3.0) -> bool:
    time.sleep(quiet)
    return all(component.synced() for component in components)


def allocated_nodes(cluster: Cluster, timeout: float) -> list[str]:
    """Upstream's cluster manager gave every node an ID and a default-network subnet again
    (``stop_ovnk_writers`` removed ovnk's); lines of the report."""
    def allocated() -> bool:
        return all({NODE_ID, NODE_SUBNETS} <= set(node["metadata"].get("annotations") or {})
                   for node in cluster.nodes())

    wait_for("upstream's node IDs and subnets", allocated, timeout)
    lines = ["nodes (allocated by upstream's cluster manager):"]
    for node in cluster.nodes():
        annotations = node["metadata"]["annotations"]
        subnets = json.loads(annotations[NODE_SUBNETS])["default"]
        lines.append(f"  {node['metadata']['name']}: node-id {annotations[NODE_ID]}, "
                     f"subnet {', '.join(subnets) if isinstance(subnets, list) else subnets}")
    return lines


# -- the workshop --------------------------------------------------------------------------
@dataclass
class Workshop:
    namespaces: list[str]
    networks: dict[str, str]  # namespace -> its primary UDN's name
    pods: list[tuple[str, str]]

    @classmethod
    def read(cls) -> Workshop:
        docs = [doc for name in WORKSHOP_FILES
                for doc in yaml.safe_load_all((WORKSHOP / name).read_text()) if doc]
        namespaces = [d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"]
        networks = {d["metadata"]["namespace"]: d["metadata"]["name"] for d in docs
                    if d["kind"] == "UserDefinedNetwork"
                    and _role(d["spec"]) == "Primary"}
        pods = [(d["metadata"]["namespace"], d["metadata"]["name"]) for d in docs
                if d["kind"] == "Pod"]
        return cls(namespaces, networks, pods)


def _role(spec: dict[str, Any]) -> str:
    section = spec.get(spec.get("topology", "").lower(), {})
    return str(section.get("role", ""))


def apply_workshop(cluster: Cluster, workshop: Workshop, zones: dict[str, Zone],
                   upstream: Upstream, timeout: float) -> list[str]:
    """Apply it, wait for upstream's NADs, pod annotations and ports; lines of the report."""
    report = []
    cluster.kubectl("apply", "-f", str(WORKSHOP / WORKSHOP_FILES[0]))
    cluster.kubectl("apply", "-f", str(WORKSHOP / WORKSHOP_FILES[1]))
    for namespace, name in workshop.networks.items():
        report.append(_check_network(cluster, namespace, name, timeout))
    cluster.kubectl("apply", "-f", str(WORKSHOP / WORKSHOP_FILES[2]))
    for namespace, name in workshop.pods:
        wanted = ["default", f"{namespace}/{workshop.networks[namespace]}"] \
            if namespace in workshop.networks else ["default"]
        report.append(_check_pod(cluster, zones, upstream, namespace, name, wanted, timeout))
    for node, zone in zones.items():
        routers = zone.rows(upstream, "Logical_Router")
        report.append(f"  zone {node}: {len(routers)} routers "
                      f"({', '.join(sorted(r for r in routers if 'cluster_router' in r))}), "
                      f"{len(zone.rows(upstream, 'Logical_Switch'))} switches")
    return report


def _check_network(cluster: Cluster, namespace: str, name: str, timeout: float) -> str:
    """Upstream's cluster manager created the UDN's NAD, with a network ID."""
    wait_for(f"UDN {namespace}/{name} NetworkCreated and its NAD's network-id",
             lambda: _network_ready(cluster, namespace, name), timeout)
    nad = json.loads(cluster.kubectl("get", "net-attach-def", "-n", namespace, name,
                                     "-o", "json"))
    return (f"  UDN {namespace}/{name}: NetworkCreated=True, NAD network-id "
            f"{nad['metadata']['annotations']['k8s.ovn.org/network-id']}")


def _check_pod(cluster: Cluster, zones: dict[str, Zone], upstream: Upstream, namespace: str,
               name: str, wanted: list[str], timeout: float) -> str:
    """Upstream's zone controller of the pod's node annotated it with ``wanted`` networks
    and gave it a port with each one's MAC and IP."""
    wait_for(f"pod {namespace}/{name} annotated with {', '.join(wanted)}",
             lambda: _annotated(cluster, namespace, name, wanted), timeout)
    pod = json.loads(cluster.kubectl("get", "pod", "-n", namespace, name, "-o", "json"))
    node = pod["spec"]["nodeName"]
    networks = json.loads(pod["metadata"]["annotations"]["k8s.ovn.org/pod-networks"])
    entries = [networks[key] for key in wanted]
    wait_for(f"pod {namespace}/{name}'s ports in zone {node}",
             lambda: _has_ports(zones[node], upstream, entries), timeout)
    return (f"  pod {namespace}/{name} on {node}: " + ", ".join(
        f"{key} {networks[key]['ip_addresses'][0]} ({networks[key]['role']})"
        for key in wanted) + f"; ports in zone {node}")


def _network_ready(cluster: Cluster, namespace: str, name: str) -> bool:
    udns = [u for u in cluster.get("userdefinednetworks", "-n", namespace)
            if u["metadata"]["name"] == name]
    conditions = udns[0].get("status", {}).get("conditions", []) if udns else []
    created = any(c["type"] == "NetworkCreated" and c["status"] == "True" for c in conditions)
    nads = [n for n in cluster.get("net-attach-def", "-n", namespace)
            if n["metadata"]["name"] == name]
    return created and bool(nads) and "k8s.ovn.org/network-id" in (
        nads[0]["metadata"].get("annotations") or {})


def _annotated(cluster: Cluster, namespace: str, name: str, wanted: list[str]) -> bool:
    pod = json.loads(cluster.kubectl("get", "pod", "-n", namespace, name, "-o", "json"))
    raw = (pod["metadata"].get("annotations") or {}).get("k8s.ovn.org/pod-networks")
    return isinstance(raw, str) and all(key in json.loads(raw) for key in wanted)


def _has_ports(zone: Zone, upstream: Upstream, entries: Iterable[dict[str, Any]]) -> bool:
    addresses = zone.ports(upstream)
    return all(any(f"{entry['mac_address']} {entry['ip_addresses'][0].split('/')[0]}" in a
                   for a in addresses) for entry in entries)


# -- main ----------------------------------------------------------------------------------
def check(args: argparse.Namespace, upstream: Upstream, ovnk: Path, started: Started) -> bool:
    directory: Path = args.dir
    cluster = Cluster(directory, ovnk)
    print(f"== upstream: {upstream.versions()}")
    print(f"== ovnk local up --no-dataplane --nodes {args.nodes} --dir {directory}")
    started.cluster = True
    started.save()
    cluster.up(args.nodes)
    cluster.stop_ovnk_writers()
    nodes = [node["metadata"]["name"] for node in cluster.nodes()]
    peer = directory / "upstream"
    print(f"== upstream's cluster manager and zone controllers for {', '.join(nodes)} "
          f"(logs: {peer}/logs)")
    components = start_upstream(upstream, cluster, nodes, peer, started)
    zones = {node: Zone(node, peer / "zones" / node) for node in nodes}
    ok = True
    report = ["", "== report"]
    try:
        wait_synced(components, args.timeout)
        report.append("components (every informer synced, every controller started):")
        for component in components:
            state = LogState.read(component.log)
            report.append(f"  {component.name}: in {state.synced_after():.1f}s, "
                          f"{len(state.informers())} informers ({', '.join(state.informers())}), "
                          f"{len(state.started)} controllers")
        report += allocated_nodes(cluster, args.timeout)
        report.append("workshop (namespaces, UDNs, pods) rendered by upstream:")
        report += apply_workshop(cluster, Workshop.read(), zones, upstream, args.timeout)
    except PeerError as exc:
        ok = False
        report.append(f"FAILED: {exc}")
        for component in components:
            if missing := LogState.read(component.log).unsynced():
                report.append(f"  {component.name} not synced: {', '.join(missing)}")
    refused = refused_requests(directory / "logs" / "apiserver.log")
    report.append(f"requests the API server refused (4xx/5xx): {sum(refused.values())}")
    report += counted(refused)
    if any(text.startswith("5") for text in refused):
        ok = False
    report.append("errors and warnings logged:")
    logs = [c.log for c in components] + sorted((directory / "logs").glob("*.log")) + \
        sorted((peer / "zones").glob("*/*.log"))
    problems = logged_problems(logs)
    for path, found in problems.items():
        report.append(f"  {Path(path).relative_to(directory)}:")
        report += counted(found)
    if not problems:
        report.append("  none")
    report.append(f"result: {'PASS' if ok else 'FAIL'}")
    print("\n".join(report))
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=None,
                        help="root holding the OVN release ovnkube needs (its usr/bin, "
                             "usr/sbin, usr/share/ovn and loader); '/' for the host's")
    parser.add_argument("--ovnkube", type=Path, default=None, help="upstream's ovnkube binary")
    parser.add_argument("--dir", type=Path, default=REPO / ".ovnk-upstream",
                        help="state directory (default .ovnk-upstream; removed first when "
                             "a previous run of this script made it)")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per wait")
    parser.add_argument("--keep", action="store_true",
                        help="leave everything running (take it down with --down)")
    parser.add_argument("--down", action="store_true", help="take a kept run down")
    args = parser.parse_args(argv)
    args.dir = args.dir.resolve()
    ovnk = Path(sys.executable).parent / "ovnk"
    if not ovnk.exists():
        parser.error(f"run this with the virtualenv's python ({ovnk} is missing)")
    if args.down:
        if (args.dir / MARKER).exists():
            Started.load(args.dir).down(ovnk)
        return 0
    if args.root is None or args.ovnkube is None:
        parser.error("--root and --ovnkube are required")
    if shutil.which("kubectl") is None:
        parser.error("kubectl is not on PATH")
    upstream = Upstream(args.root.resolve(), args.ovnkube.resolve())
    try:
        upstream.check()
        fresh_directory(args.dir, ovnk)
    except PeerError as exc:
        print(f"upstream_peer: {exc}", file=sys.stderr)
        return 2
    started = Started(args.dir)
    started.save()
    try:
        ok = check(args, upstream, ovnk, started)
    except PeerError as exc:
        print(f"upstream_peer: {exc}", file=sys.stderr)
        ok = False
    finally:
        if args.keep:
            print(f"kept running; upstream's NB: {args.dir}/upstream/bin/ovn-nbctl "
                  f"--db=unix:{args.dir}/upstream/zones/<node>/ovnnb_db.sock show; "
                  f"take it down: {sys.executable} {__file__} --down --dir {args.dir}")
        else:
            started.down(ovnk)
    return 0 if ok else 1


def fresh_directory(directory: Path, ovnk: Path) -> None:
    """Start from nothing: a previous run of this script is taken down and removed; any
    other existing directory is refused."""
    if not directory.exists():
        return
    if not (directory / MARKER).exists():
        raise PeerError(f"{directory} exists and is not a previous run of this script; "
                        "give another --dir")
    Started.load(directory).down(ovnk)
    shutil.rmtree(directory)


if __name__ == "__main__":
    raise SystemExit(main())
