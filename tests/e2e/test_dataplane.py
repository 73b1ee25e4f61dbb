"""Real packets in ``ovnk local``: pods in network namespaces, per-node OVS and ovn-controller.

Every pair of workshop pods is tried with a real ping between their primary-network
addresses, and the answer must equal ``ovnk reachability``'s (ovn-trace).  A pair counts
as reachable only if the *target* pod's kernel received the echo requests (its ICMP
counters moved) and the source got replies: with overlapping pod IPs (teal reuses blue's
CIDR) a reply alone could come from a same-address pod of the source's own network.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.cgroups import KUBELET_CGROUP_FILE, KubeletCgroup
from ovnk_local.cluster import LocalCluster
from ovnk_local.dataplane import EXTERNAL_HOST_IP
from ovnk_local.testing.dataplane import (
    ping,
    pod_netns,
    primary_ip,
    real_reachability,
    require_dataplane,
)

from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.node import netlink
from ovnk_core.node.netns import NETNS_DIR, NetnsError
from ovnk_core.ovn import install
from ovnk_core.ovn.install import program_name
from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]
WORKSHOP = Path(__file__).resolve().parents[2] / "examples" / "workshop"
POD_NETWORKS = "k8s.ovn.org/pod-networks"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    require_dataplane()
    local = LocalCluster(tmp_path_factory.mktemp("dataplane") / ".ovnk")
    local.up(nodes=2, timeout=90, dataplane=True)
    yield local
    local.down()
    assert local.dataplane.namespaces() == [], "ovnk local down left namespaces behind"


def kubectl(cluster: LocalCluster, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(["kubectl", "--kubeconfig", str(cluster.kubeconfig), *args],
                            input=stdin, capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


def diagnostics(cluster: LocalCluster) -> str:
    """The tails of the logs that explain a pod that does not become ready."""
    parts = []
    for log in sorted(cluster.log_dir.glob("*")):
        if log.name.endswith(("node-agent.log", "ovn-controller.log", "kubelet.log")):
            lines = log.read_text(errors="replace").splitlines()[-15:]
            parts.append(f"--- {log.name}\n" + "\n".join(lines))
    return "\n".join(parts)


def wait_ready(cluster: LocalCluster, namespace: str) -> None:
    result = subprocess.run(["kubectl", "--kubeconfig", str(cluster.kubeconfig), "wait",
                             "--for=condition=Ready", "pod", "--all", "-n", namespace,
                             "--timeout=90s"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"pods of {namespace} not ready: {result.stderr}\n" + \
        diagnostics(cluster)


def pods(cluster: LocalCluster, *namespaces: str) -> list[dict[str, Any]]:
    found = []
    for namespace in namespaces:
        found += json.loads(kubectl(cluster, "get", "pods", "-n", namespace, "-o",
                                    "json"))["items"]
    return found


def ping_as_kubelet(cluster: LocalCluster, node: str, netns: str, ip: str) -> bool:
    """``ping`` from a process in the node's kubelet cgroup, as the kubelet probes."""
    recorded = KubeletCgroup.read(cluster.dir / "nodes" / node / KUBELET_CGROUP_FILE)
    assert recorded.directory is not None, recorded.error
    procs = recorded.directory / "cgroup.procs"
    result = subprocess.run(
        ["sh", "-c", f'echo $$ > "{procs}" && exec ip netns exec {netns} ping -c 3 -i 0.2 '
                     f"-W 1 -q {ip}"], capture_output=True, text=True)
    return result.returncode == 0


def test_workshop_pods_get_real_interfaces_bound_before_they_are_ready(
        cluster: LocalCluster) -> None:
    for manifest in ("00-namespaces.yaml", "10-networks.yaml", "20-pods.yaml"):
        kubectl(cluster, "apply", "-f", str(WORKSHOP / manifest))
    for namespace in ("blue", "green", "teal"):
        wait_ready(cluster, namespace)
    for pod in pods(cluster, "blue", "green", "teal"):
        netns = pod_netns(cluster, pod)
        assert (NETNS_DIR / netns).exists()
        links = subprocess.run(["ip", "-n", netns, "-j", "addr"], capture_output=True,
                               text=True, check=True).stdout
        names = {link["ifname"]: [a["local"] for a in link["addr_info"] if a["family"] ==
                                  "inet"] for link in json.loads(links)}
        networks = json.loads(pod["metadata"]["annotations"][POD_NETWORKS])
        assert names["eth0"] == [networks["default"]["ip_addresses"][0].split("/")[0]]
        assert names["ovn-udn1"] == [primary_ip(pod)]
        # Ready only once ovn-controller bound the ports (upstream's CNI waits for this)
        node = cluster.dataplane.node(pod["spec"]["nodeName"],
                                      cluster.state().nodes.index(pod["spec"]["nodeName"]))
        installed = node.vsctl("--columns=external_ids", "find", "interface",
                               f'external_ids:"k8s.ovn.org/pod"="{pod["metadata"]["namespace"]}'
                               f'/{pod["metadata"]["name"]}"')
        assert installed.count('ovn-installed="true"') == 2, installed


def test_every_ovn_and_ovs_process_runs_the_selected_ovn(cluster: LocalCluster) -> None:
    """OVN's daemons and each node's OVS (its userspace datapath) are of one install: the
    one OVNK_OVN selects (26.03's root unless told otherwise), as their /proc command lines
    show, and the node's ovs-vswitchd says it is that OVS."""
    ovn = install.selected()
    state = cluster.state()
    assert state.ovn == ovn.spec
    daemons = {name: record for name, record in state.processes.items()
               if program_name(record.args) in ("ovsdb-server", "ovn-northd", "ovs-vswitchd",
                                                "ovn-controller")}
    assert {"northd", "ovn-worker/ovs-vswitchd", "ovn-worker2/ovn-controller"} <= set(daemons)
    for name, record in daemons.items():
        running = Path(f"/proc/{record.pid}/cmdline").read_bytes().split(b"\0")
        expected = ovn.command(program_name(record.args))
        assert [part.decode() for part in running[:len(expected)]] == expected, name
    node = cluster.dataplane.node("ovn-worker", 0)
    version = subprocess.run(ovn.command("ovs-appctl", "-t", f"{node.dir}/ovs-vswitchd.ctl",
                                         "version"), capture_output=True, text=True, check=True)
    assert version.stdout.split()[-1] == ovn.versions["ovs"], version.stdout


def test_real_pings_agree_with_ovn_trace_on_every_workshop_pair(cluster: LocalCluster) -> None:
    selected = pods(cluster, "blue", "green", "teal")
    assert len(selected) == 6
    real = real_reachability(cluster, selected)
    assert ("blue/blue", "blue/blue1") in real and ("teal/teal1", "teal/teal") in real
    assert not {pair for pair in real if pair[0].split("/")[0] != pair[1].split("/")[0]}
    result = subprocess.run(
        [sys.executable, "-m", "ovnk_core.cli.main", "reachability", "--config",
         str(cluster.config_file), "-n", "blue", "-n", "green", "-n", "teal", "--wait", "60",
         "--format", "json"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    traced = {tuple(pair) for pair in json.loads(result.stdout)["reachable"]}
    assert real == traced


def test_default_network_pods_reach_each_other_across_nodes(cluster: LocalCluster) -> None:
    kubectl(cluster, "create", "namespace", "plain")
    for name in ("plain-a", "plain-b"):
        kubectl(cluster, "run", name, "-n", "plain", "--image=agnhost")
    wait_ready(cluster, "plain")
    a, b = sorted(pods(cluster, "plain"), key=lambda p: p["metadata"]["name"])
    assert a["spec"]["nodeName"] != b["spec"]["nodeName"]
    assert real_reachability(cluster, [a, b]) == {("plain/plain-a", "plain/plain-b"),
                                                 ("plain/plain-b", "plain/plain-a")}


def test_deleting_a_pod_removes_its_namespace_and_ports(cluster: LocalCluster) -> None:
    [pod] = [p for p in pods(cluster, "plain") if p["metadata"]["name"] == "plain-b"]
    netns = pod_netns(cluster, pod)
    node = cluster.dataplane.node(pod["spec"]["nodeName"],
                                  cluster.state().nodes.index(pod["spec"]["nodeName"]))
    kubectl(cluster, "delete", "pod", "plain-b", "-n", "plain")
    wait_until(lambda: not (NETNS_DIR / netns).exists(), what=f"{netns} removed")
    assert node.vsctl("--columns=name", "find", "interface",
                      'external_ids:"k8s.ovn.org/pod"="plain/plain-b"') == ""


def test_kubectl_exec_runs_commands_in_the_pod(cluster: LocalCluster) -> None:
    blue1, green = (next(p for p in pods(cluster, ns) if p["metadata"]["name"] == name)
                    for ns, name in (("blue", "blue1"), ("green", "green")))
    base = ["kubectl", "--kubeconfig", str(cluster.kubeconfig), "exec", "-n", "blue", "blue"]
    reached = subprocess.run([*base, "--", "ping", "-c", "3", "-i", "0.2", "-W", "1",
                              primary_ip(blue1)], capture_output=True, text=True, timeout=60)
    assert reached.returncode == 0 and " 0% packet loss" in reached.stdout, reached.stderr
    isolated = subprocess.run([*base, "--", "ping", "-c", "1", "-W", "1", primary_ip(green)],
                              capture_output=True, text=True, timeout=60)
    assert isolated.returncode == 1
    assert "command terminated with exit code 1" in isolated.stderr
    echoed = subprocess.run([*base, "-i", "--", "cat"], input="through stdin\n",
                            capture_output=True, text=True, timeout=60)
    assert (echoed.returncode, echoed.stdout) == (0, "through stdin\n")
    addresses = subprocess.run([*base, "--", "ip", "-br", "addr", "show", "ovn-udn1"],
                               capture_output=True, text=True, timeout=60)
    assert primary_ip(next(p for p in pods(cluster, "blue")
                           if p["metadata"]["name"] == "blue")) in addresses.stdout


def ovnk(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ovnk_core.cli.main", *args],
                          capture_output=True, text=True, timeout=120, env=env)


def test_ovnk_tools_find_the_cluster_from_its_kubeconfig_and_exec_keeps_options(
        cluster: LocalCluster) -> None:
    """No --config: KUBECONFIG=DIR/kubeconfig brings DIR/ovnk.toml's OVN addresses along."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVNK_")}
    env["KUBECONFIG"] = str(cluster.kubeconfig)
    traced = ovnk("reachability", "-n", "blue", "--format", "json", "--wait", "60", env=env)
    assert traced.returncode == 0, traced.stderr
    assert ["blue/blue", "blue/blue1"] in json.loads(traced.stdout)["reachable"]
    blue = next(p for p in pods(cluster, "blue") if p["metadata"]["name"] == "blue")
    shown = ovnk("local", "exec", "blue", "-n", "blue", "--dir", str(cluster.dir), "--", "ip",
                 "-br", "-4", "addr", "show", "ovn-udn1")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split()[0].split("@")[0] == "ovn-udn1"  # options reached ip
    assert f"{primary_ip(blue)}/" in shown.stdout


def test_pods_reach_the_external_host_as_their_node(cluster: LocalCluster) -> None:
    """UDN pod → gateway router (SNAT to the network's masquerade IP) → host (masquerade to
    the node IP) → underlay; default-network pod → gateway router (SNAT to the node IP) →
    underlay, replies steered back by conntrack: the external host sees node IPs only."""
    external = cluster.dataplane.external_netns
    subprocess.run(["ip", "netns", "exec", external, "nft", "-f", "-"], check=True, text=True,
                   input="""table ip seen {
  chain input {
    type filter hook input priority 0;
    icmp type echo-request ip saddr 172.18.0.2-172.18.0.254 counter
    icmp type echo-request counter
  }
}
""")
    # UDN pods, and a default-network pod (its router SNATs to the node IP directly)
    selected = pods(cluster, "blue", "green", "teal") + [
        p for p in pods(cluster, "plain") if p["metadata"]["name"] == "plain-a"]
    assert len(selected) == 7
    for pod in selected:
        netns = pod_netns(cluster, pod)
        assert wait_until(lambda n=netns: ping(n, EXTERNAL_HOST_IP), timeout=30,  # type: ignore[misc]
                          what=f"{netns} reaching the external host")
    counters = subprocess.run(["ip", "netns", "exec", external, "nft", "-j", "list", "table",
                               "ip", "seen"], capture_output=True, text=True,
                              check=True).stdout
    packets = [item["rule"]["expr"][-1]["counter"]["packets"]
               for item in json.loads(counters)["nftables"] if "rule" in item]
    from_nodes, total = packets
    assert total >= 3 * len(selected) and from_nodes == total, counters


def test_management_ports_reach_pods_and_keep_udn_routes_out_of_the_main_table(
        cluster: LocalCluster) -> None:
    selected = pods(cluster, "blue", "green", "teal")
    state = cluster.state()
    for pod in selected:
        node = pod["spec"]["nodeName"]
        node_netns = cluster.dataplane.node(node, state.nodes.index(node)).netns
        # the default network: the kubelet's probes reach pods through ovn-k8s-mp0; any
        # other host process is kept away from these pods (UDN isolation)
        assert ping_as_kubelet(cluster, node, node_netns, pod["status"]["podIP"]), \
            pod["metadata"]["name"]
        assert not ping(node_netns, pod["status"]["podIP"]), pod["metadata"]["name"]
        # each primary UDN through its own port and routing table
        network_id = json.loads(kubectl(cluster, "get", "net-attach-def", "-n",
                                        pod["metadata"]["namespace"], "-o", "json"))[
            "items"][0]["metadata"]["annotations"]["k8s.ovn.org/network-id"]
        bound = subprocess.run(["ip", "netns", "exec", node_netns, "ping", "-c", "3", "-i",
                                "0.2", "-W", "1", "-q", "-I", f"ovn-k8s-mp{network_id}",
                                primary_ip(pod)], capture_output=True, text=True)
        assert bound.returncode == 0, (pod["metadata"]["name"], bound.stdout, bound.stderr)
    for node_name in state.nodes:
        node_netns = cluster.dataplane.node(node_name, state.nodes.index(node_name)).netns
        main = subprocess.run(["ip", "-n", node_netns, "route"], capture_output=True,
                              text=True, check=True).stdout
        assert "103.103." not in main and "203.203." not in main, main
    events = kubectl(cluster, "get", "events", "-n", "default")
    vrf = subprocess.run(["ip", "link", "add", "vrf-probe", "type", "vrf", "table", "4242"],
                         capture_output=True, text=True)
    if vrf.returncode == 0:
        subprocess.run(["ip", "link", "del", "vrf-probe"], check=True)
    else:  # this kernel: policy routing instead, and the nodes say so
        assert "VRFUnsupported" in events


def test_udn_pods_reach_the_hosts_masquerade_ip_as_their_networks_masquerade_ip(
        cluster: LocalCluster) -> None:
    """The host's masquerade IP (.2, on the gateway bridge) is reached like any address
    outside the network: through the pod's gateway router, SNATed to the network's own
    masquerade IP, and the host answers back the same way (the cluster router reroutes
    only the node's IPs and the network's masquerade IP to the management port, as
    upstream).  The host never sees a pod address, which other networks may reuse."""
    state = cluster.state()
    table = """table ip seen-masq {
  chain input {
    type filter hook input priority 0;
    icmp type echo-request ip daddr 169.254.0.2 ip saddr 169.254.0.10-169.254.0.255 counter
    icmp type echo-request ip daddr 169.254.0.2 counter
  }
}
"""
    node_netns = {name: cluster.dataplane.node(name, state.nodes.index(name)).netns
                  for name in state.nodes}
    for netns in node_netns.values():
        subprocess.run(["ip", "netns", "exec", netns, "nft", "-f", "-"], check=True, text=True,
                       input=table)
    try:
        selected = pods(cluster, "blue", "green", "teal")
        for pod in selected:
            assert ping(pod_netns(cluster, pod), "169.254.0.2"), pod["metadata"]["name"]
        for netns in node_netns.values():
            listed = subprocess.run(["ip", "netns", "exec", netns, "nft", "-j", "list",
                                     "table", "ip", "seen-masq"], capture_output=True,
                                    text=True, check=True).stdout
            masqueraded, total = [item["rule"]["expr"][-1]["counter"]["packets"]
                                  for item in json.loads(listed)["nftables"] if "rule" in item]
            assert masqueraded == total, listed
    finally:
        for netns in node_netns.values():
            subprocess.run(["ip", "netns", "exec", netns, "nft", "delete", "table", "ip",
                            "seen-masq"], check=False)


def test_an_unusable_network_annotation_fails_the_sandbox_with_an_event(
        cluster: LocalCluster) -> None:
    networks = {"default": {"ip_addresses": ["10.244.0.200/24"], "mac_address":
                            "0a:58:0a:f4:00:c8", "role": "primary"},
                "plain/broken": {"ip_addresses": ["not-an-ip"], "role": "secondary"}}
    kubectl(cluster, "apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "unwired", "namespace": "plain",
                     "annotations": {POD_NETWORKS: json.dumps(networks)}},
        "spec": {"nodeName": "ovn-worker",
                 "containers": [{"name": "c", "image": "agnhost"}]}}))
    wait_until(lambda: "FailedCreatePodSandBox" in kubectl(cluster, "get", "events", "-n",
                                                            "plain"),
               what="the kubelet's sandbox failure event")
    events = kubectl(cluster, "get", "events", "-n", "plain", "--field-selector",
                     "reason=FailedCreatePodSandBox", "-o", "json")
    [event] = json.loads(events)["items"]
    assert "invalid pod network entry" in event["message"] and "not-an-ip" in event["message"]
    pod = json.loads(kubectl(cluster, "get", "pod", "unwired", "-n", "plain", "-o", "json"))
    assert pod["status"].get("phase") != "Running"
    # the node's other pods are unaffected: blue's pod still reaches its peer
    blue, blue1 = (next(p for p in pods(cluster, "blue") if p["metadata"]["name"] == name)
                   for name in ("blue", "blue1"))
    assert ping(pod_netns(cluster, blue), primary_ip(blue1))
    kubectl(cluster, "delete", "pod", "unwired", "-n", "plain", "--wait=false")


def moved_entry(entry: dict[str, Any], host: int, mac: str | None = None) -> dict[str, Any]:
    """``entry`` with the address ``host`` of its subnet (and that address's MAC, or
    ``mac``), as the pod IPAM would write it for a pod at that address."""
    interface = ipaddress.ip_interface(entry["ip_addresses"][0])
    address = interface.network.network_address + host
    moved = {**entry, "ip_addresses": [f"{address}/{interface.network.prefixlen}"],
             "mac_address": mac or mac_from_ip(address)}
    moved.pop("ip_address", None)
    return moved


def test_entries_the_zone_refuses_are_refused_at_cni_add_with_its_reason(
        cluster: LocalCluster) -> None:
    # An admin writes pod-networks by hand: the zone renders no port for an entry of a NAD
    # that does not exist, nor for one with a multicast MAC; the node agent plumbs neither
    # (no clash on ovn-udn1, no traceback) and the kubelet says why, in the zone's words.
    blue, blue1 = (next(p for p in pods(cluster, "blue") if p["metadata"]["name"] == name)
                   for name in ("blue", "blue1"))
    node = blue["spec"]["nodeName"]
    agent_log = cluster.log_dir / f"{node}-node-agent.log"
    logged_before = len(agent_log.read_text(errors="replace"))
    networks = json.loads(blue["metadata"]["annotations"][POD_NETWORKS])
    [primary] = [key for key in networks if key != "default"]
    forged = {
        "forged-nad": {"default": moved_entry(networks["default"], 200),
                       primary: moved_entry(networks[primary], 200),
                       "blue/no-such-nad": moved_entry(networks[primary], 201)},
        "forged-mac": {"default": moved_entry(networks["default"], 202),
                       primary: moved_entry(networks[primary], 202, "03:58:67:67:00:ca")}}
    for name, annotation in forged.items():
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "blue",
                         "annotations": {POD_NETWORKS: json.dumps(annotation)}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "agnhost"}]}}))

    def sandbox_failures() -> dict[str, str] | None:
        events = json.loads(kubectl(cluster, "get", "events", "-n", "blue", "--field-selector",
                                    "reason=FailedCreatePodSandBox", "-o", "json"))["items"]
        found = {e["involvedObject"]["name"]: e["message"] for e in events
                 if e["involvedObject"]["name"] in forged}
        return found if len(found) == len(forged) else None
    failures = wait_until(sandbox_failures, timeout=60, what="both pods' sandbox failures")
    entry = "not rendering the k8s.ovn.org/pod-networks entry for"
    assert failures["forged-nad"] == (
        "Failed to create pod sandbox: failed to set up the pod network: pod blue/forged-nad: "
        f"{entry} blue/no-such-nad: NAD blue/no-such-nad does not exist")
    # the multicast MAC: the zone's own event, word for word
    zone_says = (f"pod blue/forged-mac: {entry} {primary} (network {networks_name(primary)}):"
                 " MAC address 03:58:67:67:00:ca is a multicast address")
    assert failures["forged-mac"] == ("Failed to create pod sandbox: failed to set up the pod "
                                      f"network: {zone_says}")
    wait_until(lambda: zone_says in kubectl(cluster, "get", "events", "-n", "blue",
                                            "--field-selector",
                                            "reason=ErrorAddingLogicalPort"),
               what="the zone's ErrorAddingLogicalPort event")
    for name in forged:
        pod = json.loads(kubectl(cluster, "get", "pod", name, "-n", "blue", "-o", "json"))
        assert pod["status"].get("phase") != "Running"
        # the runtime makes the sandbox's namespace at each try (and removes it after the
        # refusal): what must never be there is the pod's interface
        assert not plumbed(f"{cluster.dataplane.pod_netns_prefix(node)}blue.{name}"), \
            f"{name} was plumbed"
    # nothing else is touched, and the node agent logged no traceback
    assert ping(pod_netns(cluster, blue), primary_ip(blue1))
    assert "Traceback" not in agent_log.read_text(errors="replace")[logged_before:]
    for name in forged:
        kubectl(cluster, "delete", "pod", name, "-n", "blue", "--wait=false")
    # gone with their sandboxes (the runtime makes one at each retry), so that no later test
    # sees a refused pod's namespace come and go
    wait_until(lambda: not any(f"blue.{name}" in netns for name in forged
                               for netns in cluster.dataplane.namespaces()),
               timeout=60, what="the refused pods' sandboxes removed")


def plumbed(netns: str) -> bool:
    """Whether ``netns`` exists with an ``eth0``."""
    try:
        return netlink.link_index("eth0", netns=netns) is not None
    except NetnsError:
        return False


def networks_name(nad_key: str) -> str:
    """The network a workshop NAD names (``ns/name`` → ``ns_name``)."""
    return nad_key.replace("/", "_", 1)


def test_restarting_the_node_agents_leaves_running_pods_alone(cluster: LocalCluster) -> None:
    before = set(cluster.dataplane.namespaces())
    assert cluster.restart("node-agent") == ["ovn-worker/node-agent", "ovn-worker2/node-agent"]
    assert set(cluster.dataplane.namespaces()) == before
    blue, blue1 = (next(p for p in pods(cluster, "blue") if p["metadata"]["name"] == name)
                   for name in ("blue", "blue1"))
    assert ping(pod_netns(cluster, blue), primary_ip(blue1))
    assert ping(pod_netns(cluster, blue), EXTERNAL_HOST_IP)


def test_down_then_up_over_kept_state_brings_the_dataplane_back(cluster: LocalCluster) -> None:
    # Runs last in this module: the cluster goes down and comes back with its kept state
    # (OVS databases already hold the bridges; ovs-vswitchd makes the devices later).
    cluster.down()
    assert cluster.dataplane.namespaces() == []
    cluster.up(nodes=2, timeout=90, dataplane=True)
    blue, blue1 = (next(p for p in pods(cluster, "blue") if p["metadata"]["name"] == name)
                   for name in ("blue", "blue1"))
    wait_until(lambda: ping(pod_netns(cluster, blue), primary_ip(blue1)), timeout=60,
               what="blue reaches blue1 again")
    assert ping(pod_netns(cluster, blue), EXTERNAL_HOST_IP)
