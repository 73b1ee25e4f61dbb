"""The reachability matrix: one ovn-trace per (source, destination) pod pair, all asked of
one ``ovn-trace`` daemon (:class:`~ovnk_core.ovn.trace_server.TraceServer`)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ovnk_core.ovn.trace import TraceError, packet_flow
from ovnk_core.ovn.trace_server import TraceServer
from ovnk_core.reachability.endpoints import Endpoint


@dataclass
class Matrix:
    """``verdicts[(src, dst)]`` is True when the packet reaches dst's port."""

    endpoints: list[Endpoint]
    protocol: str
    port: int | None
    verdicts: dict[tuple[str, str], bool] = field(default_factory=dict)
    errors: dict[tuple[str, str], str] = field(default_factory=dict)

    def allowed(self, src: str, dst: str) -> bool:
        return self.verdicts.get((src, dst), False)

    def groups(self) -> list[tuple[str, list[Endpoint]]]:
        """Endpoints grouped by network, in a stable order."""
        by_network: dict[str, list[Endpoint]] = {}
        for endpoint in self.endpoints:
            by_network.setdefault(endpoint.network, []).append(endpoint)
        return [(name, sorted(items, key=lambda e: e.pod))
                for name, items in sorted(by_network.items())]

    def ordered(self) -> list[Endpoint]:
        return [e for _, items in self.groups() for e in items]


# what every conntrack lookup says of the traced packet: the first of a new connection
# (ovn-trace's default, est, is a packet of a connection stateful ACLs already allowed)
NEW_CONNECTION = "new"


def verdict(server: TraceServer, src: Endpoint, dst: Endpoint, protocol: str,
            port: int | None) -> bool:
    """Whether the first packet of a new connection from ``src`` reaches ``dst``'s port."""
    flow = packet_flow(src.port, src.mac, src.router_mac, src.ip, dst.ip, protocol=protocol,
                       dst_port=port)
    return server.trace(src.switch, flow).delivered_to(dst.port)


def build_matrix(sb_remote: str, endpoints: Sequence[Endpoint], protocol: str = "icmp",
                 port: int | None = None, workers: int = 4,
                 server: TraceServer | None = None) -> Matrix:
    """Every ordered pair of ``endpoints`` traced: with ``server`` (already running, with
    ``ct=NEW_CONNECTION``) or a daemon of its own for the call."""
    if server is None:
        with TraceServer(sb_remote, ct=NEW_CONNECTION) as own:
            return build_matrix(sb_remote, endpoints, protocol, port, workers, own)
    matrix = Matrix(list(endpoints), protocol, port)
    pairs = [(s, d) for s in endpoints for d in endpoints if s.pod != d.pod]

    def run(pair: tuple[Endpoint, Endpoint]) -> tuple[tuple[str, str], bool | str]:
        src, dst = pair
        try:
            return (src.pod, dst.pod), verdict(server, src, dst, protocol, port)
        except TraceError as exc:
            return (src.pod, dst.pod), str(exc)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for key, result in pool.map(run, pairs):
            if isinstance(result, bool):
                matrix.verdicts[key] = result
            else:
                matrix.errors[key] = result
    return matrix
