"""The reachability matrix: one ovn-trace per (source, destination) pod pair."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ovnk_core.ovn.trace import TraceError, packet_flow, trace
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


def verdict(sb_remote: str, src: Endpoint, dst: Endpoint, protocol: str,
            port: int | None) -> bool:
    flow = packet_flow(src.port, src.mac, src.router_mac, src.ip, dst.ip, protocol=protocol,
                       dst_port=port)
    return trace(sb_remote, src.switch, flow).delivered_to(dst.port)


def build_matrix(sb_remote: str, endpoints: Sequence[Endpoint], protocol: str = "icmp",
                 port: int | None = None, workers: int = 8) -> Matrix:
    matrix = Matrix(list(endpoints), protocol, port)
    pairs = [(s, d) for s in endpoints for d in endpoints if s.pod != d.pod]

    def run(pair: tuple[Endpoint, Endpoint]) -> tuple[tuple[str, str], bool | str]:
        src, dst = pair
        try:
            return (src.pod, dst.pod), verdict(sb_remote, src, dst, protocol, port)
        except TraceError as exc:
            return (src.pod, dst.pod), str(exc)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for key, result in pool.map(run, pairs):
            if isinstance(result, bool):
                matrix.verdicts[key] = result
            else:
                matrix.errors[key] = result
    return matrix
