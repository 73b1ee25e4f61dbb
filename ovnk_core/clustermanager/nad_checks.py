"""The cluster manager's NAD checks that look beyond one network's own NADs.

The NAD controller works per network; two rules need more:

* **one primary network per namespace**: a primary NAD in a namespace that
  already has another network's primary NAD (a UDN's, say) is refused with
  upstream's message; the NAD that was there first keeps the namespace — the
  one accepted, or carrying the network ID it was given, so a restart does
  not swap them.  When a primary NAD goes, the other primary NADs of its
  namespace are looked at again.
* **NADs that name no network**: a NAD without a config (no ``spec``, an
  empty one, an empty ``config``: upstream's parse fails on them too), whose
  config is not JSON (or holds a lone UTF-16 surrogate: ``embedded_json``),
  or is an OVN-Kubernetes netconf without a usable ``name``, is keyed by no
  network, so the per-network controller never sees it;
  ``UnnamedNadReporter`` gives it the Warning event the others get.  Other
  CNI plugins' NADs (a JSON object of another ``type``) are left alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from ovnk_core.errors import NetworkConfigError
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.informer import Informer
from ovnk_core.kube.resources import object_key
from ovnk_core.networks import nad_config
from ovnk_core.networks.netconf import parse_common
from ovnk_core.networks.netinfo import ROLE_PRIMARY

log = logging.getLogger(__name__)

PRIMARY_CONFLICT_REASON = "PrimaryNetworkConflict"


def ovn_netconf(nad: JSON) -> dict[str, Any] | None:
    """A NAD's config when it is an OVN-Kubernetes netconf (a JSON object of our type; one
    nested too deeply to decode is none: ``nad_config``)."""
    return nad_config.ovn_config_of(nad)


def primary_network_of(nad: JSON) -> str | None:
    """The network a live NAD declares as primary (``None``: not a primary OVN NAD)."""
    config = ovn_netconf(nad)
    if config is None or nad["metadata"].get("deletionTimestamp"):
        return None
    name = config.get("name")
    return name if config.get("role") == ROLE_PRIMARY and isinstance(name, str) and name \
        else None


def primary_conflict(nad: JSON, network: str, same_namespace: Iterable[JSON],
                     established: Callable[[JSON], bool]) -> str | None:
    """Upstream's message when another network's primary NAD already holds the namespace of
    primary NAD ``nad`` (``established(nad)``: the NAD is accepted, or carries the network
    ID it was given before a restart), else ``None``.  When both are established (state
    from before this check existed), the NAD whose key sorts first keeps the namespace, the
    same one after every restart."""
    key = object_key(nad)
    mine = established(nad)
    for other in sorted(same_namespace, key=object_key):
        other_key = object_key(other)
        other_network = primary_network_of(other)
        if other_network is None or other_network == network or other_key == key:
            continue
        if established(other) and not (mine and key < other_key):
            return f"NAD {other_key} is primary for the namespace, NAD {key} can't be primary"
    return None


def primary_networks_in_namespace(same_namespace: Iterable[JSON]) -> list[str]:
    """Networks of the namespace's primary NADs (looked at again when one of them goes)."""
    return sorted({n for n in map(primary_network_of, same_namespace) if n is not None})


def missing_config_problem(nad: JSON) -> str | None:
    """Why a NAD has no CNI config to read (no ``spec``, an empty one, a ``config`` that is
    absent, empty or not a string), or ``None`` when it has one.  Upstream reports these
    like any config that is not JSON."""
    spec = nad.get("spec")
    if not isinstance(spec, dict):
        return "it has no spec" if spec is None else "its spec is not an object"
    config = spec.get("config")
    if config is None:
        return "its spec has no config"
    if not isinstance(config, str):
        return "its spec.config is not a string"
    if not config.strip():
        return "its spec.config is empty"
    return None


def unnamed_nad_problem(nad: JSON) -> tuple[str, str] | None:
    """(reason, message) for a NAD that names no network because its config is missing or
    broken; ``None`` for a NAD of another CNI plugin (a JSON object of another ``type``)."""
    try:
        missing = missing_config_problem(nad)
        if missing is not None:
            raise NetworkConfigError(f"netconf cannot be parsed: {missing}")
        parse_common(nad["spec"]["config"])
    except NetworkConfigError as exc:
        if exc.reason == "NotOVNKubernetes":
            return None
        return exc.reason, f"NAD {object_key(nad)} is invalid: {exc}"
    return None


class UnnamedNadReporter:
    """A Warning event (once per distinct message) on each NAD ``names`` finds no network
    in whose config is nonetheless broken (see ``unnamed_nad_problem``)."""

    def __init__(self, nads: Informer, recorder: EventRecorder,
                 names: Callable[[JSON], list[str]]) -> None:
        self.nads = nads
        self.recorder = recorder
        self.names = names
        self._reported: dict[str, str] = {}
        self.controller = Controller("cluster-manager-nad-config-reporter", self.reconcile)
        self.controller.watch(nads, key_func=lambda nad: [] if names(nad) else
                              [object_key(nad)])

    def reconcile(self, key: str) -> None:
        nad = self.nads.peek(key)
        problem = unnamed_nad_problem(nad) if nad is not None and not self.names(nad) \
            else None
        if problem is None or nad is None:
            self._reported.pop(key, None)
            return
        reason, message = problem
        if self._reported.get(key) == message:
            return
        self._reported[key] = message
        log.warning("%s", message)
        self.recorder.event(nad, WARNING, reason, message)

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
