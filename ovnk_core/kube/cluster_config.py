"""Where a component finds its cluster: a kubeconfig, else the pod's service account.

A component started with ``--k8s-kubeconfig FILE`` uses that file.  Without one
it runs as a pod does (``dist/``): ``KUBERNETES_SERVICE_HOST``/``_PORT`` name
the API server, and the service account's token and CA are files the kubelet
mounts under ``/var/run/secrets/kubernetes.io/serviceaccount``; the official
client's in-cluster loader reads them (and re-reads the token as the kubelet
rotates it).  Outside a pod, ``$KUBECONFIG`` or ``~/.kube/config`` is used as
kubectl would.  When none of these exists, or one cannot be used, the component
stops with one ``ConfigError`` naming what is missing, never a traceback.
The token and CA paths are parameters so tests (and ``ovnk local``) can point
them elsewhere.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config.incluster_config import (
    SERVICE_HOST_ENV_NAME,
    SERVICE_PORT_ENV_NAME,
    InClusterConfigLoader,
)

from ovnk_core.errors import ConfigError

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True)
class ServiceAccountFiles:
    """The files a pod's service account is mounted as."""

    token: Path = SERVICE_ACCOUNT_DIR / "token"
    ca: Path = SERVICE_ACCOUNT_DIR / "ca.crt"

    @classmethod
    def in_dir(cls, directory: Path) -> ServiceAccountFiles:
        return cls(directory / "token", directory / "ca.crt")


def in_pod(environ: Mapping[str, str]) -> bool:
    """Whether the environment names an API server as the kubelet does in a pod."""
    return bool(environ.get(SERVICE_HOST_ENV_NAME))


def in_cluster_configuration(environ: Mapping[str, str],
                             files: ServiceAccountFiles) -> k8s_client.Configuration:
    """The configuration of a pod's service account, or a ``ConfigError`` naming what is
    missing (the port variable, the token file, the CA file, or an empty one)."""
    host = environ.get(SERVICE_HOST_ENV_NAME, "")
    if not environ.get(SERVICE_PORT_ENV_NAME):
        raise ConfigError(f"in-cluster configuration: {SERVICE_HOST_ENV_NAME}={host} is set "
                          f"but {SERVICE_PORT_ENV_NAME} is not")
    for what, path in (("token", files.token), ("CA certificate", files.ca)):
        if not path.is_file():
            raise ConfigError(f"in-cluster configuration: the service account's {what} "
                              f"{path} does not exist (is the service account token "
                              "mounted? automountServiceAccountToken must not be false)")
    configuration = k8s_client.Configuration()
    try:
        InClusterConfigLoader(token_filename=str(files.token), cert_filename=str(files.ca),
                              environ=dict(environ)).load_and_set(configuration)
    except k8s_config.ConfigException as exc:
        raise ConfigError(f"in-cluster configuration ({files.token}, {files.ca}): "
                          f"{exc}") from None
    return configuration


def default_kubeconfig(environ: Mapping[str, str]) -> Path | None:
    """The first file of ``$KUBECONFIG``, else ``~/.kube/config`` when it exists."""
    listed = [p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return Path(listed[0])
    default = Path(environ.get("HOME", "~")).expanduser() / ".kube" / "config"
    return default if default.is_file() else None


def kubeconfig_configuration(path: str) -> k8s_client.Configuration:
    """The configuration of a kubeconfig file's current context, or a ``ConfigError``."""
    if not Path(path).is_file():
        raise ConfigError(f"kubeconfig {path} does not exist")
    configuration = k8s_client.Configuration()
    try:
        k8s_config.load_kube_config(config_file=path, client_configuration=configuration)
    except (k8s_config.ConfigException, OSError, ValueError) as exc:
        raise ConfigError(f"kubeconfig {path} cannot be used: {exc}") from None
    return configuration


def cluster_configuration(kubeconfig: str = "", environ: Mapping[str, str] | None = None,
                          files: ServiceAccountFiles | None = None,
                          ) -> k8s_client.Configuration:
    """The client configuration of a component (see the module docstring for the order)."""
    environ = os.environ if environ is None else environ
    if kubeconfig:
        return kubeconfig_configuration(kubeconfig)
    if in_pod(environ):
        return in_cluster_configuration(environ, files or ServiceAccountFiles())
    fallback = default_kubeconfig(environ)
    if fallback is not None:
        return kubeconfig_configuration(str(fallback))
    raise ConfigError(
        "no cluster to talk to: give --k8s-kubeconfig FILE (or $OVNK_K8S_KUBECONFIG), or run "
        f"in a pod ({SERVICE_HOST_ENV_NAME}/{SERVICE_PORT_ENV_NAME} and the service "
        f"account's token and CA under {SERVICE_ACCOUNT_DIR}); neither $KUBECONFIG nor "
        "~/.kube/config exists either")


__all__ = ["SERVICE_ACCOUNT_DIR", "ServiceAccountFiles", "cluster_configuration",
           "default_kubeconfig", "in_cluster_configuration", "in_pod",
           "kubeconfig_configuration"]
