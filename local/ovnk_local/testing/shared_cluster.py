"""One ``ovnk local`` cluster (2 nodes, real dataplane) shared by the e2e modules that only add
namespaces and cluster-scoped networks of their own to it, and the reset that hands it from
one module to the next.

A second cluster, without a dataplane, is shared the same way by the modules of
``CONTROL_PLANE_MODULES`` (``shared_control_plane``).

Starting a cluster costs ~15-25 s and stopping it ~5-8 s (2 CPUs, load 5-10); most dataplane
modules started an identical one.  A module that shares it uses the ``shared_dataplane``
fixture (``tests/e2e/conftest.py``) and is listed in ``SHARED_MODULES``, so that
``pytest -n N --dist loadscope`` runs all of them in one worker, the cluster's owner
(``xdist_scopes``; a module not listed still works, in a cluster of its worker's own).
Before a module, :func:`snapshot` records what the cluster holds; after it, :func:`reset`
deletes what the module made (namespaces, with their pods, services and networks;
ClusterUserDefinedNetworks; pods and services it added to namespaces that were there) and
waits until nothing of it is left (:func:`leftovers`): no such API object, no NB row naming
its networks or objects, no pod network namespace or container of its pods, and every
process of the cluster running and ready.  A module that kills or restarts a component must
bring it back (the reset fails otherwise).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import Any

from ovnk_core.kube.client import KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.errors import NotFound
from ovnk_core.kube.resources import CUDNS, NAMESPACES, PODS, SERVICES, Resource
from ovnk_core.node.netns import NETNS_DIR
from ovnk_core.ovn.install import command
from ovnk_core.ovn.ownership import NETWORK_KEY, OWNER_KEY
from ovnk_core.testing.waiting import wait_until
from ovnk_local.cgroups import cgroup2_mount
from ovnk_local.cluster import LocalCluster
from ovnk_local.supervisor import process_alive

SHARED_GROUP = "shared-dataplane"
# the modules that use ``shared_dataplane`` (test ids are relative to the repository's root)
SHARED_MODULES = frozenset(f"tests/e2e/{name}.py" for name in (
    "test_cni_runtime", "test_isolation_dataplane", "test_layer2_dataplane",
    "test_localnet_dataplane", "test_services_dataplane", "test_shared_cluster",
    "test_workloads"))
# the modules that use ``shared_control_plane``: one 2-node cluster without a dataplane (no
# node agents, no pod network namespaces), reset between them the same way
CONTROL_PLANE_GROUP = "shared-control-plane"
CONTROL_PLANE_MODULES = frozenset(f"tests/e2e/{name}.py" for name in (
    "test_local_typed_client", "test_security"))
# which xdist scope (worker) each shared module belongs to (``xdist_scopes``)
SCOPE_GROUPS = {**{path: SHARED_GROUP for path in SHARED_MODULES},
                **{path: CONTROL_PLANE_GROUP for path in CONTROL_PLANE_MODULES}}
# what the shared cluster runs with (``tests/e2e/conftest.py``): the settings the docs'
# walkthrough uses, so a module needing persistent IPs (a VM moving) shares it too
SHARED_SETTINGS = {"enable_persistent_ips": "true"}
# what a module may add to a namespace that was there before it (kube-system's services)
NAMESPACED = (PODS, SERVICES)
# the NB tables whose rows ovnk stamps with its owner and network (external_ids)
NB_TABLES = ("Logical_Switch", "Logical_Switch_Port", "Logical_Router", "Logical_Router_Port",
             "Logical_Router_Static_Route", "Logical_Router_Policy", "NAT", "Load_Balancer",
             "ACL", "Address_Set", "Port_Group", "DHCP_Options")
RESET_TIMEOUT = 90.0
DOWN_CHECK = "down-check"  # the namespace of the pod that runs while the cluster goes down


@dataclass(frozen=True)
class Snapshot:
    """What the cluster held before a module: namespaces, CUDNs, the pods and services of
    each namespace (``(resource, namespace, name)``) and the networks named in NB."""

    namespaces: frozenset[str]
    cudns: frozenset[str]
    objects: frozenset[tuple[str, str, str]]
    networks: frozenset[str]


def admin(cluster: LocalCluster) -> KubeClient:
    return KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig)))


def _names(client: KubeClient, resource: Resource, namespace: str | None = None) -> set[str]:
    return {item["metadata"]["name"] for item in client.list(resource, namespace)["items"]}


def _objects(client: KubeClient) -> set[tuple[str, str, str]]:
    return {(resource.plural, item["metadata"]["namespace"], item["metadata"]["name"])
            for resource in NAMESPACED for item in client.list(resource)["items"]}


def nb_owned_rows(cluster: LocalCluster) -> list[dict[str, str]]:
    """The external_ids of every row of ``NB_TABLES`` (one ``ovsdb-client`` call)."""
    ops = [{"op": "select", "table": table, "where": [], "columns": ["external_ids"]}
           for table in NB_TABLES]
    result = subprocess.run(
        command("ovsdb-client", "transact", f"unix:{cluster.nb_socket}",
                json.dumps(["OVN_Northbound", *ops])),
        capture_output=True, text=True, check=True, timeout=30)
    return [dict(row["external_ids"][1]) for reply in json.loads(result.stdout)
            for row in reply["rows"]]


def _networks(rows: list[dict[str, str]]) -> set[str]:
    return {ids[NETWORK_KEY] for ids in rows if ids.get(NETWORK_KEY)}


def snapshot(cluster: LocalCluster) -> Snapshot:
    client = admin(cluster)
    return Snapshot(frozenset(_names(client, NAMESPACES)), frozenset(_names(client, CUDNS)),
                    frozenset(_objects(client)), frozenset(_networks(nb_owned_rows(cluster))))


def _delete(client: KubeClient, resource: Resource, name: str,
            namespace: str | None = None) -> None:
    try:
        client.delete(resource, name, namespace)
    except NotFound:
        pass


def leftovers(cluster: LocalCluster, before: Snapshot) -> list[str]:
    """What is left of a module that ran since ``before`` (nothing: the cluster is as the
    next module may find it)."""
    client = admin(cluster)
    left: list[str] = []
    gone_namespaces = _names(client, NAMESPACES) - before.namespaces
    left += [f"namespace {ns}" for ns in sorted(gone_namespaces)]
    left += [f"ClusterUserDefinedNetwork {name}"
             for name in sorted(_names(client, CUDNS) - before.cudns)]
    new_objects = _objects(client) - before.objects
    left += [f"{kind} {ns}/{name}" for kind, ns, name in sorted(new_objects)]
    rows = nb_owned_rows(cluster)
    left += [f"NB rows of network {net}" for net in sorted(_networks(rows) - before.networks)]
    # an owner scope names its object (``pod:<namespace>/<name>``, a service's
    # ``<namespace>/<name>``): none may name an
    # object of a namespace the module made, nor one it added to a namespace that was there
    present = {(ns, name) for _, ns, name in before.objects | _objects(client)}
    for ids in rows:
        owner = ids.get(OWNER_KEY, "")
        namespace, _, name = owner.rsplit(":", 1)[-1].partition("/")
        if name and (namespace not in before.namespaces or (namespace, name) not in present):
            left.append(f"NB row owned by {owner}")
    left += _pod_leftovers(cluster, client)
    left += [f"process {status.name} not running and ready" for status in cluster.status()
             if not (status.running and status.ready)]
    return sorted(set(left))


def _pod_leftovers(cluster: LocalCluster, client: KubeClient) -> list[str]:
    """Pod network namespaces and containers of pods that no longer exist."""
    pods = client.list(PODS)["items"]
    existing = {cluster.dataplane.pod_netns_prefix(str(pod["spec"].get("nodeName")))
                + f"{pod['metadata']['namespace']}.{pod['metadata']['name']}" for pod in pods}
    prefixes = tuple(cluster.dataplane.pod_netns_prefix(node) for node in cluster.state().nodes)
    left = [f"pod network namespace {path.name}" for path in sorted(NETNS_DIR.glob("*"))
            if path.name.startswith(prefixes) and path.name not in existing]
    uids = {pod["metadata"]["uid"] for pod in pods}
    containers = cluster.run_dir / "containers"
    left += [f"containers of deleted pod {entry.name}" for entry in
             sorted(containers.iterdir() if containers.exists() else ())
             if entry.name not in uids]
    return left


def container_pids(cluster: LocalCluster) -> list[int]:
    """The pids of the containers the kubelet stand-in runs; a pod's directory removed while
    it is read (its pod just deleted) counts as no container."""
    pids: list[int] = []
    containers = cluster.run_dir / "containers"
    for pod_dir in containers.iterdir() if containers.exists() else ():
        try:
            records = list(pod_dir.glob("*.json"))
            pids += [int(json.loads(record.read_text())["pid"]) for record in records]
        except FileNotFoundError:
            continue
    return pids


def down_leaves_nothing(cluster: LocalCluster) -> None:
    """``down`` with a pod running: no container process, no cgroup, no namespace is left.

    :raises AssertionError: naming what is left.
    """
    try:
        client = admin(cluster)
        client.create(NAMESPACES, {"metadata": {"name": DOWN_CHECK}})
        client.create(PODS, {"metadata": {"name": "running", "namespace": DOWN_CHECK},
                             "spec": {"nodeName": cluster.state().nodes[0], "containers": [
                                 {"name": "c", "image": "registry.k8s.io/pause:3.9"}]}},
                      DOWN_CHECK)
        wait_until(lambda: container_pids(cluster), 60, what="a running container")
        pids = container_pids(cluster)
    finally:
        cluster.down()
    assert pids and not [pid for pid in pids if process_alive(pid)], \
        "down left containers running"
    mount = cgroup2_mount()
    if mount is not None:
        assert not (mount / "ovnk-local" / cluster.dataplane.prefix).exists()
    assert cluster.dataplane.namespaces() == [], "ovnk local down left namespaces behind"


def reset(cluster: LocalCluster, before: Snapshot, timeout: float = RESET_TIMEOUT) -> None:
    """Delete what was made since ``before`` and wait until nothing of it is left.

    :raises AssertionError: something is left after ``timeout``, named.
    """
    client = admin(cluster)
    for name in _names(client, CUDNS) - before.cudns:
        _delete(client, CUDNS, name)
    resources: dict[str, Any] = {resource.plural: resource for resource in NAMESPACED}
    for kind, namespace, name in _objects(client) - before.objects:
        if namespace in before.namespaces:
            _delete(client, resources[kind], name, namespace)
    for namespace in _names(client, NAMESPACES) - before.namespaces:
        _delete(client, NAMESPACES, namespace)
    left: list[str] = []

    def clean() -> bool:
        left[:] = leftovers(cluster, before)
        return not left

    try:
        wait_until(clean, timeout, interval=0.5, what="the shared cluster's reset")
    except AssertionError:
        raise AssertionError(f"the shared cluster still holds, {timeout:.0f}s after the "
                             f"module's objects were deleted: {'; '.join(left)}") from None


__all__ = ["CONTROL_PLANE_GROUP", "CONTROL_PLANE_MODULES", "NB_TABLES", "SCOPE_GROUPS",
           "SHARED_GROUP", "SHARED_MODULES", "SHARED_SETTINGS", "Snapshot",
           "container_pids", "down_leaves_nothing", "leftovers", "nb_owned_rows", "reset",
           "snapshot"]
