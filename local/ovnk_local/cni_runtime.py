"""The kubelet stand-in's CNI runtime, as containerd's: netns, conflist, plugins, cache.

For each pod sandbox it creates the network namespace (``ip netns add``: a bind mount
under ``/var/run/netns``), reads the node's network configuration list from the node's
CNI config dir (the first ``*.conflist`` by name, as libcni picks it), executes the
plugins it names from ``CNI_PATH`` in order, each with the previous one's result as
``prevResult``, caches the last result (``DIR/run/cni/results/<container id>.json``, with
the conflist it came from) and at teardown runs DEL in reverse order with the cached
result, then deletes the namespace.  A failed ADD is undone at once (DEL, namespace), as
containerd tears a failed sandbox down, except "try again later" (error 11: the ports are
not bound yet), whose namespace is kept for the retry.  ``install_cni_config`` writes
the conflist ``ovnk local`` installs on every node: ovnk's ``ovn-k8s-cni-overlay``
chained with Debian's reference ``tuning`` plugin (``containernetworking-plugins``),
which sets a sysctl in the pod's namespace.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ovnk_cni import install as cni_install
from ovnk_core.node.netns import NETNS_DIR

log = logging.getLogger(__name__)

CONFLIST_NAME = cni_install.CONFLIST_NAME
NETWORK_NAME = cni_install.NETWORK_NAME
REFERENCE_PLUGINS_DIR = Path("/usr/lib/cni")
TUNING_SYSCTL = "net.ipv4.conf.eth0.arp_notify"  # off by default; the chain turns it on
TRY_AGAIN_LATER = 11


class CniPluginError(Exception):
    """A plugin of the chain failed: its spec error, or why it could not run."""

    def __init__(self, plugin: str, code: int, msg: str, details: str = "") -> None:
        super().__init__(f"plugin type={plugin!r} failed (code {code}): {msg}"
                         + (f": {details}" if details else ""))
        self.plugin = plugin
        self.code = code
        self.msg = msg
        self.details = details

    @property
    def reason(self) -> str:
        """What a pod's event says: the details when there are (the plugin's own words about
        this pod), else the message."""
        return self.details or self.msg

    @property
    def try_again(self) -> bool:
        return self.code == TRY_AGAIN_LATER


def node_cni_conf_dir(node_dir: Path) -> Path:
    """The node's CNI config dir (a real node's ``/etc/cni/net.d``)."""
    return node_dir / "cni" / "net.d"


def cni_path() -> list[Path]:
    """Where the plugins are: the directory of ovnk's console scripts, and Debian's."""
    return [Path(sys.executable).parent, REFERENCE_PLUGINS_DIR]


def build_conflist(server_socket: Path) -> dict[str, Any]:
    """The node's network configuration list: ovnk's plugin, then ``tuning``."""
    return cni_install.build_conflist(server_socket, [{"type": "tuning",
                                                       "sysctl": {TUNING_SYSCTL: "1"}}])


def install_cni_config(node_dir: Path, server_socket: Path) -> Path:
    """Write the node's conflist (atomically); its path."""
    return cni_install.write_conflist(node_cni_conf_dir(node_dir), server_socket,
                                      build_conflist(server_socket)["plugins"][1:])


def load_conflist(conf_dir: Path) -> dict[str, Any]:
    """The first ``*.conflist`` of ``conf_dir`` by name.

    :raises CniPluginError: none there, or unreadable (the network is not ready)."""
    files = sorted(conf_dir.glob("*.conflist")) if conf_dir.is_dir() else []
    if not files:
        raise CniPluginError("", TRY_AGAIN_LATER, "no network config found",
                             f"no *.conflist in {conf_dir}")
    try:
        conflist = json.loads(files[0].read_text())
        plugins = conflist["plugins"]
        if not isinstance(plugins, list) or not plugins:
            raise ValueError("no plugins")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CniPluginError("", 7, "invalid network config list",
                             f"{files[0]}: {exc}") from None
    return dict(conflist)


@dataclass(frozen=True)
class Sandbox:
    """One pod sandbox, as the runtime names it to the plugins."""

    container_id: str
    netns: str  # the namespace's name under /var/run/netns
    namespace: str
    name: str
    uid: str
    ifname: str = "eth0"

    @property
    def netns_path(self) -> Path:
        return NETNS_DIR / self.netns


class CniRuntime:
    """Runs the chain of ``conf_dir``'s conflist for sandboxes; caches results in
    ``cache_dir``."""

    def __init__(self, conf_dir: Path, cache_dir: Path,
                 path: list[Path] | None = None, timeout: float = 150.0) -> None:
        self.conf_dir = conf_dir
        self.cache_dir = cache_dir
        self.path = path if path is not None else cni_path()
        self.timeout = timeout

    # -- the namespace ---------------------------------------------------------------------
    @staticmethod
    def create_netns(sandbox: Sandbox) -> None:
        if sandbox.netns_path.exists():
            return
        result = subprocess.run(["ip", "netns", "add", sandbox.netns], capture_output=True,
                                text=True)
        if result.returncode != 0 and not sandbox.netns_path.exists():
            raise CniPluginError("", 5, "cannot create the pod's network namespace",
                                 f"ip netns add {sandbox.netns}: {result.stderr.strip()}")

    @staticmethod
    def delete_netns(sandbox: Sandbox) -> None:
        if not sandbox.netns_path.exists():
            return
        result = subprocess.run(["ip", "netns", "del", sandbox.netns], capture_output=True,
                                text=True)
        if result.returncode != 0 and sandbox.netns_path.exists():
            raise CniPluginError("", 5, "cannot delete the pod's network namespace",
                                 f"ip netns del {sandbox.netns}: {result.stderr.strip()}")

    # -- the chain -------------------------------------------------------------------------
    def _cache_file(self, sandbox: Sandbox) -> Path:
        return self.cache_dir / f"{sandbox.container_id}.json"

    def cached(self, sandbox: Sandbox) -> dict[str, Any] | None:
        """``{"conflist", "result"}`` of the sandbox's last ADD, or None."""
        try:
            return dict(json.loads(self._cache_file(sandbox).read_text()))
        except (OSError, ValueError):
            return None

    def _find(self, plugin: str) -> Path:
        for directory in self.path:
            candidate = directory / plugin
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
        hint = " (Debian's reference plugins: apt-get install containernetworking-plugins, " \
               "which make bootstrap does)" if plugin != "ovn-k8s-cni-overlay" else ""
        raise CniPluginError(plugin, 5, f"failed to find plugin {plugin!r} in path "
                             f"{[str(p) for p in self.path]}{hint}")

    def _exec(self, command: str, sandbox: Sandbox, conf: dict[str, Any],
              netns: bool = True) -> dict[str, Any] | None:
        plugin = str(conf.get("type") or "")
        binary = self._find(plugin)
        env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
               "CNI_COMMAND": command, "CNI_CONTAINERID": sandbox.container_id,
               "CNI_IFNAME": sandbox.ifname, "CNI_PATH": os.pathsep.join(map(str, self.path)),
               "CNI_ARGS": f"IgnoreUnknown=1;K8S_POD_NAMESPACE={sandbox.namespace};"
                           f"K8S_POD_NAME={sandbox.name};K8S_POD_INFRA_CONTAINER_ID="
                           f"{sandbox.container_id};K8S_POD_UID={sandbox.uid}"}
        if netns:
            env["CNI_NETNS"] = str(sandbox.netns_path)
        try:
            result = subprocess.run([str(binary)], input=json.dumps(conf).encode(),
                                    capture_output=True, env=env, timeout=self.timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CniPluginError(plugin, 5, f"cannot run plugin {plugin}", str(exc)) from None
        output = result.stdout.decode(errors="replace").strip()
        if result.returncode != 0:
            try:
                error = json.loads(output)
                raise CniPluginError(plugin, int(error["code"]), str(error.get("msg", "")),
                                     str(error.get("details", "")))
            except (ValueError, KeyError, TypeError):
                raise CniPluginError(plugin, 999, f"plugin {plugin} exited with "
                                     f"{result.returncode}",
                                     (output + result.stderr.decode(errors="replace"))
                                     .strip()) from None
        return dict(json.loads(output)) if output else None

    @staticmethod
    def _plugin_conf(conflist: dict[str, Any], plugin: dict[str, Any],
                     previous: dict[str, Any] | None) -> dict[str, Any]:
        conf = {**plugin, "cniVersion": conflist["cniVersion"], "name": conflist["name"]}
        if previous is not None:
            conf["prevResult"] = previous
        return conf

    def add(self, sandbox: Sandbox) -> dict[str, Any]:
        """ADD through the chain; the final result (cached)."""
        conflist = load_conflist(self.conf_dir)
        self.create_netns(sandbox)
        result: dict[str, Any] | None = None
        try:
            for plugin in conflist["plugins"]:
                result = self._exec("ADD", sandbox,
                                    self._plugin_conf(conflist, plugin, result)) or result
        except CniPluginError as exc:
            if not exc.try_again:  # as containerd: the failed sandbox is torn down
                self._undo(sandbox, conflist)
            raise
        final = result or {}
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        temporary = self._cache_file(sandbox).with_suffix(".tmp")
        temporary.write_text(json.dumps({"conflist": conflist, "result": final}))
        temporary.replace(self._cache_file(sandbox))
        return final

    def check(self, sandbox: Sandbox) -> None:
        """CHECK through the chain with the cached result."""
        cache = self.cached(sandbox)
        if cache is None:
            raise CniPluginError("", 3, "no cached result of the sandbox",
                                 sandbox.container_id)
        conflist = cache["conflist"]
        for plugin in conflist["plugins"]:
            self._exec("CHECK", sandbox, self._plugin_conf(conflist, plugin, cache["result"]))

    def delete(self, sandbox: Sandbox) -> None:
        """DEL through the chain in reverse order (the cached conflist and result when
        there are, as containerd), then the namespace and the cache entry."""
        cache = self.cached(sandbox)
        conflist = cache["conflist"] if cache else load_conflist(self.conf_dir)
        previous = cache["result"] if cache else None
        present = sandbox.netns_path.exists()
        for plugin in reversed(conflist["plugins"]):
            self._exec("DEL", sandbox, self._plugin_conf(conflist, plugin, previous),
                       netns=present)
        self.delete_netns(sandbox)
        self.forget(sandbox)

    def _undo(self, sandbox: Sandbox, conflist: dict[str, Any]) -> None:
        """DEL of a failed ADD, then the namespace; what fails here is only logged (the
        ADD's error is the one to report)."""
        for plugin in reversed(conflist["plugins"]):
            try:
                self._exec("DEL", sandbox, self._plugin_conf(conflist, plugin, None))
            except CniPluginError as exc:
                log.warning("CNI DEL after a failed ADD of %s: %s", sandbox.container_id, exc)
        try:
            self.delete_netns(sandbox)
        except CniPluginError as exc:
            log.warning("%s", exc)

    def forget(self, sandbox: Sandbox) -> None:
        self._cache_file(sandbox).unlink(missing_ok=True)
