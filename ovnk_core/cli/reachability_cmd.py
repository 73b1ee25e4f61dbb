"""``ovnk reachability``: ask ovn-trace which selected pods can reach which, print the matrix.

Works against any cluster ovnk renders: the pods come from the Kubernetes API
(namespaces and/or a label selector), their ports from Northbound, the
verdicts from ``ovn-trace`` on Southbound.  No packet is sent.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from ovnk_core.cli.cluster_access import (
    add_connect_timeout,
    kube_client,
    northbound,
    tool_config,
)
from ovnk_core.config import add_config_arguments
from ovnk_core.errors import OvnkError
from ovnk_core.kube.client import JSON
from ovnk_core.kube.resources import PODS
from ovnk_core.ovn.nb import NbClient
from ovnk_core.reachability.endpoints import (
    Endpoint,
    EndpointError,
    default_entry,
    find_endpoint,
)
from ovnk_core.reachability.matrix import build_matrix
from ovnk_core.reachability.render import render_text, write_picture


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "reachability", help="which pods can reach which, according to ovn-trace",
        description="For the selected pods, traces a packet from each pod's primary network "
                    "port to every other pod's primary IP with ovn-trace and prints the "
                    "matrix (delivered or dropped). Needs the cluster's kubeconfig "
                    "(--kubeconfig or KUBECONFIG) and its --nb-address and --sb-address; "
                    "an ovnk.toml next to the kubeconfig (as ovnk local writes) supplies "
                    "the addresses.")
    parser.add_argument("-n", "--namespace", action="append", default=[],
                        help="namespace to take pods from (repeatable; default: all)")
    parser.add_argument("-l", "--selector", default=None, help="label selector for the pods")
    parser.add_argument("--protocol", choices=("icmp", "tcp", "udp"), default="icmp")
    parser.add_argument("--port", type=int, default=None,
                        help="destination port for tcp/udp (default 80)")
    parser.add_argument("--output", type=Path, default=None,
                        help="also write the matrix as a picture (FILE.svg or FILE.png)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--default-network", action="store_true",
                        help="also trace to and from each primary-UDN pod's default-network "
                             "interface (<ns>/<name>@default; its open-default-ports shown)")
    parser.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                        help="wait up to this long for every selected pod to be rendered")
    add_connect_timeout(parser)
    add_config_arguments(parser)
    parser.set_defaults(func=run)


OPEN_DEFAULT_PORTS = "k8s.ovn.org/open-default-ports"


def collect(nb: NbClient, pods: list[JSON], default_network: bool = False
            ) -> tuple[list[Endpoint], list[str]]:
    """The traceable pods' endpoints, and why the others cannot be traced.
    ``default_network``: also the default-network endpoint of each pod whose primary network
    is a UDN, noted with the ports it opens there (``k8s.ovn.org/open-default-ports``)."""
    endpoints, skipped = [], []
    for pod in sorted(pods, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"])):
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        try:
            endpoints.append(find_endpoint(nb, pod))
        except EndpointError as exc:
            skipped.append(f"{key}: {exc}")
        if not default_network or default_entry(pod) is None:
            continue
        try:
            endpoint = find_endpoint(nb, pod, on_default=True)
        except EndpointError as exc:
            skipped.append(f"{key}@default: {exc}")
            continue
        opened = (pod["metadata"].get("annotations") or {}).get(OPEN_DEFAULT_PORTS)
        note = "open: " + " ".join(str(opened).split()) if opened else ""
        endpoints.append(dataclasses.replace(endpoint, note=note))
    return endpoints, skipped


def run(args: argparse.Namespace) -> int:
    skip = ("namespace", "selector", "protocol", "port", "output", "format", "wait", "func",
            "command", "connect_timeout", "default_network")
    config = tool_config({k: v for k, v in vars(args).items() if k not in skip})
    if args.protocol != "icmp" and args.port is not None and not 0 < args.port < 65536:
        raise OvnkError(f"--port {args.port} is not a port number")
    if args.output is not None and args.output.suffix.lower() not in (".svg", ".png"):
        raise OvnkError(f"--output {args.output}: use a .svg or .png file name")
    client = kube_client(config)
    pods = []
    for namespace in args.namespace or [None]:
        pods += client.list(PODS, namespace, label_selector=args.selector)["items"]
    pods = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
    if not pods:
        raise OvnkError("no scheduled pod matches the selection")
    deadline = time.monotonic() + max(0.0, args.wait)
    with northbound(config, args.connect_timeout) as nb:
        while True:
            endpoints, skipped = collect(nb, pods, args.default_network)
            if not skipped or time.monotonic() >= deadline:
                break
            time.sleep(0.5)
            pods = [client.get(PODS, p["metadata"]["name"], p["metadata"]["namespace"])
                    for p in pods]
    if not endpoints:
        raise OvnkError("none of the selected pods can be traced: " + "; ".join(skipped))
    matrix = build_matrix(",".join(config.sb_address), endpoints, args.protocol, args.port)
    if args.format == "json":
        json.dump({"probe": {"protocol": args.protocol, "port": args.port},
                   "pods": [{"pod": e.pod, "network": e.network, "ip": e.ip, "note": e.note}
                            for e in matrix.ordered()],
                   "reachable": [[s, d] for (s, d), ok in sorted(matrix.verdicts.items())
                                 if ok],
                   "errors": {f"{s} -> {d}": m for (s, d), m in matrix.errors.items()},
                   "skipped": skipped}, sys.stdout, indent=2)
        print()
    else:
        sys.stdout.write(render_text(matrix))
        for line in skipped:
            print(f"skipped {line}")
    if args.output is not None:
        write_picture(matrix, args.output)
        if args.format == "text":
            print(f"wrote {args.output}")
    return 1 if matrix.errors else 0
