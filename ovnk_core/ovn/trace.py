"""Asking OVN whether a packet would be delivered, without sending one.

``ovn-trace`` runs a packet through the logical flows ovn-northd compiled
into the Southbound database.  In ``--minimal`` output every logical port
the packet reaches appears as ``output("<port>");`` (also inside ``ct_next``
and ``ct_lb_mark`` blocks), and a dropped packet has no such line, so
delivery is read off the set of output ports.  Used by tests and by
``ovnk reachability``.
"""

from __future__ import annotations

import ipaddress
import re
import subprocess
from dataclasses import dataclass

from ovnk_core.errors import OvnkError
from ovnk_core.ovn.install import command

_OUTPUT = re.compile(r'output\("([^"]+)"\)')
_SNAT = re.compile(r"ct_snat\((?:ip[46]\.src=)?([0-9A-Fa-f.:]+)\)")


class TraceError(OvnkError):
    """ovn-trace or ovn-nbctl failed (bad flow expression, unknown datapath, timeout)."""


@dataclass(frozen=True)
class TraceResult:
    datapath: str
    flow: str
    text: str
    outputs: tuple[str, ...]

    def delivered_to(self, port: str) -> bool:
        return port in self.outputs

    @property
    def snat_ips(self) -> tuple[str, ...]:
        """Source addresses the packet was SNATed to on its way (``ct_snat(...)`` actions)."""
        return tuple(dict.fromkeys(_SNAT.findall(self.text)))


def wait_for_sb(nb_remote: str, timeout: float = 30.0) -> None:
    """Return once ovn-northd has translated everything now in NB into SB."""
    try:
        subprocess.run(command("ovn-nbctl", f"--db={nb_remote}", f"--timeout={int(timeout)}",
                               "--wait=sb", "sync"), check=True, capture_output=True, text=True,
                       timeout=timeout + 5)
    except subprocess.CalledProcessError as exc:
        raise TraceError(f"ovn-nbctl --wait=sb sync failed: {exc.stderr.strip()}") from None
    except subprocess.TimeoutExpired:
        raise TraceError(f"ovn-northd did not catch up within {timeout}s") from None


def packet_flow(inport: str, src_mac: str, dst_mac: str, src_ip: str, dst_ip: str,
                protocol: str = "icmp", dst_port: int | None = None, ttl: int = 64) -> str:
    """An ovn-trace microflow for one packet entering at logical port ``inport``."""
    version = ipaddress.ip_address(src_ip).version
    ip = "ip4" if version == 4 else "ip6"
    parts = [f'inport == "{inport}"', f"eth.src == {src_mac}", f"eth.dst == {dst_mac}",
             f"{ip}.src == {src_ip}", f"{ip}.dst == {dst_ip}",
             f"ip.ttl == {ttl}"]
    if protocol == "icmp":
        parts.append("icmp4" if version == 4 else "icmp6")
    elif protocol in ("tcp", "udp"):
        parts.append(f"{protocol}.dst == {dst_port or 80}")
        parts.append(f"{protocol}.src == 33333")
    else:
        raise TraceError(f"unsupported protocol {protocol!r} (icmp, tcp, udp)")
    return " && ".join(parts)


def trace(sb_remote: str, datapath: str, flow: str, ct: str | None = None,
          lb_dst: str | None = None, timeout: float = 30.0) -> TraceResult:
    """Trace ``flow`` entering ``datapath``; return the logical ports it is output to."""
    options = [f"--ct={ct}"] if ct else []
    if lb_dst:
        options.append(f"--lb-dst={lb_dst}")
    text = _run_trace(sb_remote, datapath, flow, ["--minimal", *options], timeout)
    return TraceResult(datapath, flow, text, output_ports(text))


def output_ports(minimal: str) -> tuple[str, ...]:
    """The logical ports a ``--minimal`` trace outputs to, each once (OVN 26.03's trace also
    shows the ARP/ND a router sends out of the port the packet leaves by while the next
    hop's MAC is not known yet)."""
    return tuple(dict.fromkeys(_OUTPUT.findall(minimal)))


def trace_path(sb_remote: str, datapath: str, flow: str, timeout: float = 30.0) -> str:
    """The ``--summary`` trace of ``flow`` entering ``datapath``: the way it takes, one
    ``ingress(dp="<datapath>", inport="<port>")`` block per datapath it enters, and
    ``outport = "cr-<port>"`` where it is redirected to a distributed gateway port's
    chassis (which ``--minimal`` does not show)."""
    return _run_trace(sb_remote, datapath, flow, ["--summary"], timeout)


def _run_trace(sb_remote: str, datapath: str, flow: str, options: list[str],
               timeout: float) -> str:
    args = command("ovn-trace", f"--db={sb_remote}", *options, datapath, flow)
    try:
        proc = subprocess.run(args, check=True, capture_output=True, text=True, timeout=timeout)
    except subprocess.CalledProcessError as exc:
        raise TraceError(f"ovn-trace {datapath} failed: {exc.stderr.strip()}") from None
    except subprocess.TimeoutExpired:
        raise TraceError(f"ovn-trace {datapath} timed out after {timeout}s") from None
    # ovn-trace reports some errors (unknown datapath, bad flow) on stdout with status 0; a
    # real trace always starts with the "# <microflow>" line.
    if not any(line.startswith("# ") for line in proc.stdout.splitlines()):
        detail = (proc.stdout + proc.stderr).strip() or "no output"
        raise TraceError(f"ovn-trace {datapath} failed: {detail}")
    return proc.stdout
