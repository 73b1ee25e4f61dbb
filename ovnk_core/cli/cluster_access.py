"""How the read-only tools (``ovnk reachability``, ``ovnk show``) find a cluster.

An operator points them at a cluster the way kubectl is pointed: ``--kubeconfig``
or ``$KUBECONFIG``.  When no ``--config``/``$OVNK_CONFIG`` is given and the
kubeconfig sits next to an ``ovnk.toml`` (as ``ovnk local up`` writes them),
that file supplies the OVN addresses, so ``KUBECONFIG=.ovnk/kubeconfig ovnk
reachability`` finds the local cluster's Northbound by itself, and ``ovn-install``
beside it (or beside a named ``--config``) the OVN whose ``ovn-trace`` reads its
Southbound (unless ``$OVNK_OVN`` says).  What is missing or unreachable is one
clear ``OvnkError`` (exit 2), never a traceback or a stream of connection errors:
the NB connection is given a bounded time (``--connect-timeout``) and its
per-attempt errors are not logged.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ovnk_core.config import Config, load_config
from ovnk_core.config.loader import CONFIG_FILE_ENV
from ovnk_core.errors import OvnkError
from ovnk_core.kube.client import KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.cluster_config import default_kubeconfig
from ovnk_core.ovn.install import OVN_ENV
from ovnk_core.ovn.nb import NbClient, NbConnectError

LOCAL_CONFIG_NAME = "ovnk.toml"  # what ``ovnk local up`` writes next to its kubeconfig
LOCAL_OVN_NAME = "ovn-install"  # and the OVN it runs (OVNK_OVN's value)
DEFAULT_CONNECT_TIMEOUT = 5.0
IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"
# ovsdbapp logs an ERROR for every failed attempt to fetch the schema (5 a second)
_SCHEMA_FETCH_LOGGER = "ovsdbapp.backend.ovs_idl.idlutils"


def add_connect_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--connect-timeout", type=float, default=DEFAULT_CONNECT_TIMEOUT,
                        metavar="SECONDS",
                        help="how long to try to reach OVN Northbound before giving up "
                             f"(default {DEFAULT_CONNECT_TIMEOUT:g})")


def kubeconfig_path(config: Config, environ: Mapping[str, str] | None = None) -> Path | None:
    """The kubeconfig a tool would use: ``--kubeconfig``, else the first of ``$KUBECONFIG``,
    else ``~/.kube/config`` when it exists."""
    environ = os.environ if environ is None else environ
    if config.kubeconfig:
        return Path(config.kubeconfig)
    return default_kubeconfig(environ)


def local_config_file(cli: Mapping[str, Any], environ: Mapping[str, str]) -> Path | None:
    """``ovnk.toml`` next to the kubeconfig in use, when no config file was named."""
    if cli.get("config") or environ.get(CONFIG_FILE_ENV):
        return None
    kubeconfig = cli.get("kubeconfig") or environ.get("OVNK_K8S_KUBECONFIG") or next(
        (p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p), "")
    if not kubeconfig:
        return None
    candidate = Path(kubeconfig).expanduser().parent / LOCAL_CONFIG_NAME
    return candidate if candidate.is_file() else None


def tool_config(cli: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Config:
    """The configuration of a read-only tool (see the module docstring)."""
    environ = os.environ if environ is None else environ
    local = local_config_file(cli, environ)
    named = cli.get("config") or environ.get(CONFIG_FILE_ENV)
    config_file = Path(str(named)) if named else local
    ovn = config_file.parent / LOCAL_OVN_NAME if config_file is not None else None
    if ovn is not None and ovn.is_file() and not environ.get(OVN_ENV):
        os.environ[OVN_ENV] = ovn.read_text().strip()  # its OVN programs trace the cluster
    return load_config(cli, env=environ, config_file=local)


def kube_client(config: Config, environ: Mapping[str, str] | None = None) -> KubeClient:
    """A client of the cluster, or an ``OvnkError`` saying which kubeconfig is missing/bad."""
    path = kubeconfig_path(config, environ)
    if path is None and (os.environ if environ is None else environ).get(IN_CLUSTER_ENV):
        return KubeClient(api_client_from_kubeconfig(""))  # a pod's service account
    if path is None:
        raise OvnkError("no kubeconfig: give --kubeconfig FILE or set KUBECONFIG (for a local "
                        "cluster: KUBECONFIG=.ovnk/kubeconfig, which also finds its OVN "
                        "databases)")
    return KubeClient(api_client_from_kubeconfig(str(path)))  # a ConfigError says what is wrong


@contextmanager
def northbound(config: Config, connect_timeout: float) -> Iterator[NbClient]:
    """A started NB client, or one ``OvnkError`` after ``connect_timeout`` seconds."""
    logger = logging.getLogger(_SCHEMA_FETCH_LOGGER)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        nb = NbClient(list(config.nb_address)).start(connect_timeout=max(0.0, connect_timeout))
    except NbConnectError as exc:
        raise OvnkError(f"{exc} (gave up after {connect_timeout:g}s; --connect-timeout sets "
                        "the wait, --nb-address or --config the database)") from None
    finally:
        logger.setLevel(level)
    with nb:
        yield nb
