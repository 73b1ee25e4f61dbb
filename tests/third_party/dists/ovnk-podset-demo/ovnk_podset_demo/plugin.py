"""The ``podset`` feature: every pod's addresses as an NB address set; a host table per node.

* In the zone controller (``ovnk_zone_controllers``): one controller keyed by pod
  writes, for each running pod with a ``k8s.ovn.org/pod-networks`` annotation, the
  Address_Set ``podset_<namespace>_<name>`` holding every IP the pod has on any network,
  under the feature's owner ``feature_owner("podset", "pod:<ns>/<name>")``, and deletes
  it when the pod goes.
* In the cluster manager (``ovnk_cluster_manager_controllers``): one controller keyed by
  namespace keeps a ConfigMap ``podset`` there listing each running pod's addresses
  (``<pod>: <ip>,<ip>``), and deletes it when the namespace has none.  ovnk's cluster
  manager may not touch ConfigMaps: the feature ships that right (``rbac_rules``), which
  ovnk aggregates into the cluster manager's role.
* In the node agent (``ovnk_node_controllers``): one controller keeps the feature's own
  nftables table (``context.nft_table("podset")``, family ``inet``) in the node's network
  namespace: one base chain counting forwarded packets.  A host whose nftables refuses is
  reported with a Warning event on the Node, never a crash.

Written only against ovnk-core's plugin surface (``ovnk_core.contexts``, the hooks, the
declarative NB writer, the nft helpers and the Kubernetes client); disabling the feature
is cleaned up by the core, which removes the feature's NB rows and its table when the
feature is not enabled.
"""

from __future__ import annotations

import ipaddress
import json
import logging

from ovnk_core import hookimpl
from ovnk_core.contexts import (
    FEATURE_TABLE_FAMILY,
    ClusterManagerContext,
    NodeContext,
    ZoneContext,
    feature_owner,
)
from ovnk_core.errors import CapabilityError
from ovnk_core.feature import Feature
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.errors import AlreadyExists, NotFound
from ovnk_core.kube.events import WARNING
from ovnk_core.kube.informer import index_by_namespace
from ovnk_core.kube.resources import CONFIGMAPS, NODES, PODS
from ovnk_core.node import nft
from ovnk_core.ovn.declarative import DesiredRow, apply, delete_owner
from ovnk_core.ovn.ownership import Owner

log = logging.getLogger(__name__)

FEATURE = "podset"
CHAIN = "forward"
NODE_KEY = "node"
UNSUPPORTED = "PodsetUnsupported"
POD_NETWORKS = "k8s.ovn.org/pod-networks"
SUMMARY = "podset"  # the ConfigMap of each namespace


def pod_owner(key: str) -> Owner:
    """The owner of one pod's rows: scope ``pod:<ns>/<name>`` of the feature's controller."""
    return feature_owner(FEATURE, f"pod:{key}")


def address_set_name(key: str) -> str:
    return f"{FEATURE}_" + key.replace("/", "_")


def pod_ips(pod: JSON | None) -> list[str]:
    """Every IP (no prefix length) of a running pod's annotated networks (the cluster
    manager's ``k8s.ovn.org/pod-networks``, read as the Kubernetes API has it; an
    unreadable one gives nothing)."""
    if pod is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return []
    raw = (pod["metadata"].get("annotations") or {}).get(POD_NETWORKS)
    try:
        entries = json.loads(raw) if isinstance(raw, str) else {}
        return sorted({str(ipaddress.ip_interface(ip).ip)
                       for entry in entries.values() for ip in entry["ip_addresses"]})
    except (ValueError, TypeError, KeyError, AttributeError):
        return []


def desired_rows(key: str, ips: list[str]) -> list[DesiredRow]:
    owner = pod_owner(key)
    return [DesiredRow("Address_Set", owner.object_ids("AddressSet", key),
                       {"name": address_set_name(key), "addresses": ips})] if ips else []


class PodAddressSets:
    """The zone side: one Address_Set per pod."""

    def __init__(self, context: ZoneContext) -> None:
        self.context = context
        self.pods = context.informers.get(PODS)
        self.controller = Controller(f"{FEATURE}-zone-controller", self.reconcile)
        self.controller.watch(self.pods, primary=True)

    def reconcile(self, key: str) -> None:
        rows = desired_rows(key, pod_ips(self.pods.get(key)))
        if rows:
            apply(self.context.nb, pod_owner(key), rows)
        else:
            delete_owner(self.context.nb, pod_owner(key))


class NamespaceSummaries:
    """The cluster-manager side: a ConfigMap per namespace listing its pods' addresses.

    Nothing but the feature writes it, so the controller reads it with a plain GET (no
    informer: the feature needs no list or watch right on ConfigMaps)."""

    def __init__(self, context: ClusterManagerContext) -> None:
        self.client = context.client
        self.pods = context.informers.get(PODS, indexers={"namespace": index_by_namespace})
        self.controller = Controller(f"{FEATURE}-cluster-manager-controller", self.reconcile)
        self.controller.watch(self.pods, key_func=lambda pod: [pod["metadata"]["namespace"]])

    def desired(self, namespace: str) -> dict[str, str]:
        return {pod["metadata"]["name"]: ",".join(ips)
                for pod in self.pods.peek_by_index("namespace", namespace)
                if (ips := pod_ips(pod))}

    def reconcile(self, namespace: str) -> None:
        data = self.desired(namespace)
        try:
            current: JSON | None = self.client.get(CONFIGMAPS, SUMMARY, namespace)
        except NotFound:
            current = None
        if not data:
            if current is not None:
                self.client.delete_if_exists(CONFIGMAPS, SUMMARY, namespace)
            return
        if current is None:
            try:
                self.client.create(CONFIGMAPS, {"metadata": {"name": SUMMARY,
                                                             "namespace": namespace},
                                                "data": data}, namespace)
            except AlreadyExists:
                self.controller.requeue(namespace)
        elif (current.get("data") or {}) != data:
            self.client.update(CONFIGMAPS, {**current, "data": data})


def node_table(context: NodeContext) -> nft.NftTable:
    """The feature's whole table on a node: a forward chain that counts."""
    return nft.NftTable(
        FEATURE_TABLE_FAMILY, context.nft_table(FEATURE),
        chains=(nft.NftChain(CHAIN, "filter", "forward", 0, "accept"),),
        rules=(nft.NftRule(CHAIN, "counter", comment=f"{FEATURE}: forwarded packets"),))


class NodeTable:
    """The node side: the feature's nftables table in the node's network namespace."""

    def __init__(self, context: NodeContext) -> None:
        self.context = context
        self.nodes = context.informers.get(NODES, field_selector=f"metadata.name={context.node}")
        self.controller = Controller(f"{FEATURE}-node-controller", self.reconcile)
        self.controller.watch(self.nodes, key_func=lambda _node: [NODE_KEY])
        self._reported = False

    def reconcile(self, _key: str) -> None:
        try:
            nft.apply_table(node_table(self.context), self.context.node_netns)
        except (CapabilityError, nft.NftError) as exc:
            node = self.nodes.get(self.context.node)
            log.warning("node %s: %s cannot keep its nftables table: %s", self.context.node,
                        FEATURE, exc)
            if node is not None and not self._reported:
                self._reported = True
                self.context.recorder.event(node, WARNING, UNSUPPORTED,
                                            f"feature {FEATURE}: nftables refused its table: "
                                            f"{exc}")


class PodsetFeature(Feature):
    name = FEATURE
    # ovnk's cluster manager has no right on ConfigMaps: the feature brings its own
    rbac_rules = {"cluster-manager": [{"apiGroups": [""], "resources": ["configmaps"],
                                       "verbs": ["get", "create", "update", "delete"]}]}

    @hookimpl
    def ovnk_cluster_manager_controllers(self, context: ClusterManagerContext
                                         ) -> list[Controller]:
        return [NamespaceSummaries(context).controller]

    @hookimpl
    def ovnk_zone_controllers(self, context: ZoneContext) -> list[Controller]:
        return [PodAddressSets(context).controller]

    @hookimpl
    def ovnk_node_controllers(self, context: NodeContext) -> list[Controller]:
        return [NodeTable(context).controller]
