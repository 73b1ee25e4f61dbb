"""ovnk's components run as ``dist/`` declares them (``ovnk local up --from-manifests``).

``up --from-manifests DIR`` renders ``DIR`` with ``kubectl kustomize`` and creates
every object through the API as the administrator (``render_and_apply``): the
namespace, CRDs, service accounts, roles and bindings, the ConfigMap, the Deployment
and the DaemonSet.  ovnk's RBAC then comes from the manifests alone.  The cluster
manager (the Deployment's container ``ovnkube-cluster-manager``), every node's zone
controller and node agent (the DaemonSet's ``ovnkube-controller`` and ``ovnkube-node``)
are built from the objects the API server holds (``container_record``), as a kubelet
builds a container:

* the command and args, ``$(VAR)`` expanded from the container's environment; the
  image's ``ovnk`` is this installation's;
* the environment the manifest declares (values, ``fieldRef`` of the pod,
  ``configMapKeyRef``) and the ``KUBERNETES_SERVICE_HOST``/``_PORT`` of the API
  server, nothing inherited;
* the volumes at their ``mountPath`` in the container's own mount namespace
  (``mount_ns``): a ConfigMap as its keys' files, a ``hostPath`` as that path of the
  node's host (``Pod.host_root``, or one of ``Pod.host_paths``), and the pod's service
  account as ``token``, ``ca.crt`` and ``namespace`` at
  ``/var/run/secrets/kubernetes.io/serviceaccount``: a TokenRequest token the API
  server authenticates as that account, so the roles of ``DIR`` are the ones enforced.

The additions are ovnk local's own: ``--ready-file``, which the supervisor waits for,
and for the node agent the flags of ovnk local's wiring (``local_args``: the node's
network namespace, since every node agent runs in the host's, its gateway's physical
network, the kubelet's cgroup, the pods' namespace names).
What a manifest asks for and this cannot give (a volume kind other than ConfigMap
and hostPath, a ``valueFrom`` other than fieldRef/configMapKeyRef, a mount of an
undeclared volume, a missing ConfigMap) is a ``ManifestError`` naming it, as a
kubelet refuses to create such a container.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ovnk_core.kube.apply import apply_documents
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.errors import NotFound
from ovnk_core.kube.resources import CONFIGMAPS, DAEMONSETS, DEPLOYMENTS, SERVICE_ACCOUNTS
from ovnk_core.manifests.dist import render
from ovnk_local.state import ProcessRecord
from ovnk_local.supervisor import LocalClusterError

JSON = dict[str, Any]
SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_SECONDS = 365 * 24 * 3600
IMAGE_ENTRY_POINTS = {"ovnk": [sys.executable, "-m", "ovnk_core.cli.main"]}
# what the image itself sets (its PATH, and the OVN it holds)
IMAGE_ENVIRONMENT = ("PATH", "LANG", "OVNK_OVN")
CLUSTER_MANAGER = ("Deployment", "ovnkube-control-plane", "ovnkube-cluster-manager")
ZONE_CONTROLLER = ("DaemonSet", "ovnkube-node", "ovnkube-controller")
NODE_AGENT = ("DaemonSet", "ovnkube-node", "ovnkube-node")
_VARIABLE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class ManifestError(LocalClusterError):
    """A container of the manifests cannot be run as declared (the message says why)."""


@dataclass(frozen=True)
class Pod:
    """Where one pod of a workload runs."""

    name: str
    namespace: str
    node: str
    node_ip: str
    host_root: Path  # the node's host file system
    directory: Path  # the pod's volumes and service account files
    api_host: str
    api_port: int
    ca_pem: bytes
    # host paths that are somewhere else than under host_root (shared by every node of
    # ovnk local, or the node's own directories)
    host_paths: dict[str, Path] = field(default_factory=dict)


def render_and_apply(admin: KubeClient, directory: Path,
                     left_out: Sequence[str] = ()) -> list[JSON]:
    """Render ``directory`` (``kubectl kustomize``) and create or replace every object but
    those of the kinds ``left_out``; the objects applied.

    :raises ManifestError: an object of a kind ovnk local cannot apply.
    """
    objects = [obj for obj in render(directory) if obj.get("kind") not in left_out]
    try:
        apply_documents(admin, objects)
    except ValueError as exc:
        raise ManifestError(f"{directory}: {exc}") from None
    return objects


def expand(value: str, env: dict[str, str]) -> str:
    """``$(VAR)`` as the kubelet expands it: a defined variable's value, else left as is;
    ``$$`` is one ``$``."""
    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))
    return _VARIABLE.sub(one, value)


def _field(pod: Pod, spec: JSON, path: str) -> str:
    fields = {"metadata.name": pod.name, "metadata.namespace": pod.namespace,
              "spec.nodeName": pod.node,
              "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
              "status.hostIP": pod.node_ip, "status.podIP": pod.node_ip}
    if path not in fields:
        raise ManifestError(f"fieldRef {path} is not one ovnk local provides "
                            f"({', '.join(fields)})")
    return str(fields[path])


def container_env(admin: KubeClient, container: JSON, spec: JSON, pod: Pod) -> dict[str, str]:
    """The container's environment: the image's, the API server's service, then its own."""
    env = {name: os.environ[name] for name in IMAGE_ENVIRONMENT if name in os.environ}
    env.update({"HOSTNAME": pod.node, "KUBERNETES_SERVICE_HOST": pod.api_host,
                "KUBERNETES_SERVICE_PORT": str(pod.api_port)})
    for entry in container.get("env") or []:
        name, source = entry["name"], entry.get("valueFrom")
        if source is None:
            env[name] = expand(str(entry.get("value", "")), env)
        elif "fieldRef" in source:
            env[name] = _field(pod, spec, source["fieldRef"]["fieldPath"])
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            data = _config_map(admin, ref["name"], pod.namespace)
            if ref["key"] not in data:
                raise ManifestError(f"env {name}: ConfigMap {ref['name']} has no key "
                                    f"{ref['key']}")
            env[name] = data[ref["key"]]
        else:
            raise ManifestError(f"env {name}: valueFrom {sorted(source)} is not supported by "
                                "ovnk local (fieldRef, configMapKeyRef)")
    return env


def _config_map(admin: KubeClient, name: str, namespace: str) -> dict[str, str]:
    try:
        data: dict[str, str] = admin.get(CONFIGMAPS, name, namespace).get("data") or {}
    except NotFound:
        raise ManifestError(f"ConfigMap {namespace}/{name} does not exist") from None
    return data


def _service_account_dir(admin: KubeClient, spec: JSON, pod: Pod) -> Path:
    """``token``, ``ca.crt`` and ``namespace`` of the pod's service account (a token the API
    server issues for it through TokenRequest)."""
    account = spec.get("serviceAccountName") or "default"
    try:
        reply = admin.create_subresource(
            SERVICE_ACCOUNTS, account, "token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
             "spec": {"expirationSeconds": TOKEN_SECONDS}}, pod.namespace)
    except NotFound:
        raise ManifestError(f"service account {pod.namespace}/{account} does not exist "
                            "(the manifests name it in serviceAccountName)") from None
    directory = pod.directory / "serviceaccount"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(reply["status"]["token"])
    (directory / "ca.crt").write_bytes(pod.ca_pem)
    (directory / "namespace").write_text(pod.namespace)
    for path in directory.iterdir():
        path.chmod(0o600)
    return directory


def _volume_source(admin: KubeClient, volume: JSON, pod: Pod) -> tuple[Path, bool]:
    """Where a volume's files are on the host, and whether it is always read-only."""
    name = volume["name"]
    if "configMap" in volume:
        data = _config_map(admin, volume["configMap"]["name"], pod.namespace)
        directory = pod.directory / "volumes" / name
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.iterdir():
            if stale.name not in data:
                stale.unlink()
        for key, text in data.items():
            (directory / key).write_text(text)
        return directory, True
    if "hostPath" in volume:
        path = volume["hostPath"]["path"]
        directory = pod.host_paths.get(path.rstrip("/")) or pod.host_root / path.lstrip("/")
        directory.mkdir(parents=True, exist_ok=True)
        return directory, False
    kinds = sorted(set(volume) - {"name"})
    raise ManifestError(f"volume {name}: {', '.join(kinds)} is not supported by ovnk local "
                        "(configMap, hostPath)")


def container_mounts(admin: KubeClient, container: JSON, spec: JSON,
                     pod: Pod) -> list[list[str]]:
    """``[source, target, "ro"|"rw"]`` of every mount, parents before children."""
    volumes = {volume["name"]: volume for volume in spec.get("volumes") or []}
    mounts: list[list[str]] = []
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount["name"])
        if volume is None:
            raise ManifestError(f"container {container['name']} mounts volume "
                                f"{mount['name']!r}, which the pod does not declare")
        source, read_only = _volume_source(admin, volume, pod)
        mode = "ro" if read_only or mount.get("readOnly") else "rw"
        mounts.append([str(source), mount["mountPath"], mode])
    if spec.get("automountServiceAccountToken", True) and \
            container.get("automountServiceAccountToken", True):
        mounts.append([str(_service_account_dir(admin, spec, pod)), SERVICE_ACCOUNT_MOUNT,
                       "ro"])
    return sorted(mounts, key=lambda m: m[1].rstrip("/").count("/"))


def container_argv(container: JSON, env: dict[str, str]) -> list[str]:
    """The command line: the image's entry point for ``command[0]``, ``$(VAR)`` expanded."""
    command = [expand(word, env) for word in container.get("command") or []]
    args = [expand(word, env) for word in container.get("args") or []]
    if not command or command[0] not in IMAGE_ENTRY_POINTS:
        raise ManifestError(f"container {container['name']}: command {command} is not one "
                            f"of the image's entry points ovnk local runs "
                            f"({', '.join(IMAGE_ENTRY_POINTS)})")
    return [*IMAGE_ENTRY_POINTS[command[0]], *command[1:], *args]


def container_record(admin: KubeClient, which: tuple[str, str, str], pod: Pod,
                     record_name: str, log: Path, ready_file: Path,
                     local_args: Sequence[str] = ()) -> ProcessRecord:
    """The supervised process of one container of a workload (``CLUSTER_MANAGER``,
    ``ZONE_CONTROLLER``, ``NODE_AGENT``), as the API server holds the workload now;
    ``local_args`` (what only ovnk local's wiring needs) go after the declared ones."""
    kind, workload_name, container_name = which
    resource = DEPLOYMENTS if kind == "Deployment" else DAEMONSETS
    try:
        workload = admin.get(resource, workload_name, pod.namespace)
    except NotFound:
        raise ManifestError(f"the manifests have no {kind} {pod.namespace}/"
                            f"{workload_name}") from None
    spec = workload["spec"]["template"]["spec"]
    container = next((c for c in spec.get("containers") or []
                      if c["name"] == container_name), None)
    if container is None:
        raise ManifestError(f"{kind} {workload_name} has no container {container_name}")
    env = container_env(admin, container, spec, pod)
    return ProcessRecord(
        record_name, "component",
        [*container_argv(container, env), *local_args, "--ready-file", str(ready_file)],
        str(log),
        env=env, container=True, mounts=container_mounts(admin, container, spec, pod),
        supervised=True, ready_file=str(ready_file))


def provision_node_host(links: dict[Path, Path]) -> None:
    """Put ``links`` (a path on the node's host: what it points at) in place, as a node's
    own processes would have made them (the zone's database sockets)."""
    for link, target in links.items():
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)


__all__ = ["CLUSTER_MANAGER", "NODE_AGENT", "SERVICE_ACCOUNT_MOUNT", "ZONE_CONTROLLER",
           "ManifestError", "Pod", "container_argv", "container_env", "container_mounts",
           "container_record",
           "expand", "provision_node_host", "render_and_apply"]
