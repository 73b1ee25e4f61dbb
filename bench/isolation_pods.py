"""The pods of the isolation benchmark (``bench/isolation.py``): names, IPs, open ports."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from ovnk_core.networks.addressing import mac_from_ip

NODE = "node-0"
NAMESPACE = "udn"
OPEN_PORTS = "- protocol: tcp\n  port: 8080\n- protocol: icmp\n"
OPEN_PORTS_2 = "- protocol: udp\n  port: 53\n"


# -- the pods --------------------------------------------------------------------------------
def pod_ip(index: int, base: int = 244) -> str:
    return str(ipaddress.ip_address(f"10.{base}.0.0") + 3 + index)


def has_open_ports(index: int) -> bool:
    return index % 10 == 0  # one pod in ten: tcp/8080 and icmp


def make_pod(name: str, ip: str, open_ports: str | None) -> dict[str, Any]:
    """A running primary-UDN pod on NODE as the node agent and zone controller see it."""
    entry = {"ip_addresses": [f"{ip}/16"], "mac_address": mac_from_ip(ip),
             "role": "infrastructure-locked"}
    annotations = {"k8s.ovn.org/pod-networks": json.dumps({"default": entry})}
    if open_ports is not None:
        annotations["k8s.ovn.org/open-default-ports"] = open_ports
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}",
                         "annotations": annotations},
            "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "pause"}]},
            "status": {"phase": "Running", "podIPs": [{"ip": ip}]}}


def base_pods(count: int) -> list[dict[str, Any]]:
    return [make_pod(f"pod-{i}", pod_ip(i), OPEN_PORTS if has_open_ports(i) else None)
            for i in range(count)]
