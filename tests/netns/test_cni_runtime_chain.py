"""The local kubelet's CNI runtime with plugins that record what they were given: it makes
the namespace, runs the conflist in order with each result as the next ``prevResult``,
caches the last result, runs DEL in reverse order with it and removes the namespace; a
plugin's spec error and a plugin missing from ``CNI_PATH`` are reported as such, and a
failed ADD is torn down unless it is "try again later"."""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.cni_runtime import CniPluginError, CniRuntime, Sandbox

from ovnk_core.node.netns import NETNS_DIR

pytestmark = pytest.mark.netns

RECORDER = """#!{python}
import json, os, sys
conf = json.load(sys.stdin)
with open({log!r}, "a") as log:
    log.write(json.dumps({{"plugin": {name!r}, "command": os.environ["CNI_COMMAND"],
                          "netns": os.environ.get("CNI_NETNS"),
                          "netns_exists": os.path.exists(os.environ.get("CNI_NETNS", "/-")),
                          "args": os.environ["CNI_ARGS"], "conf": conf}}) + "\\n")
if conf.get("fail"):
    print(json.dumps({{"cniVersion": conf["cniVersion"], "code": conf["fail"], "msg": "no",
                      "details": "it said no"}}))
    sys.exit(1)
if os.environ["CNI_COMMAND"] == "ADD":
    result = conf.get("prevResult") or {{"cniVersion": conf["cniVersion"], "interfaces": [],
                                        "ips": []}}
    result["interfaces"] = result["interfaces"] + [{{"name": {name!r}}}]
    print(json.dumps(result))
"""


def plugins(tmp_path: Path, *names: str) -> tuple[Path, Path]:
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.jsonl"
    bin_dir.mkdir(exist_ok=True)
    for name in names:
        script = bin_dir / name
        script.write_text(RECORDER.format(python=sys.executable, log=str(log), name=name))
        script.chmod(0o755)
    return bin_dir, log


def conflist(conf_dir: Path, *plugin_confs: dict[str, Any]) -> None:
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "10-test.conflist").write_text(json.dumps(
        {"cniVersion": "1.0.0", "name": "net", "plugins": list(plugin_confs)}))
    (conf_dir / "99-ignored.conflist").write_text("{}")


def calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.fixture
def sandbox() -> Sandbox:
    return Sandbox("c0ffee", f"ovnkt-{secrets.token_hex(4)}", "blue", "web", "u-1")


def test_the_chain_runs_in_order_and_deletes_in_reverse(tmp_path: Path,
                                                        sandbox: Sandbox) -> None:
    bin_dir, log = plugins(tmp_path, "first", "second")
    conflist(tmp_path / "net.d", {"type": "first"}, {"type": "second", "x": 1})
    runtime = CniRuntime(tmp_path / "net.d", tmp_path / "cache", path=[bin_dir])
    try:
        result = runtime.add(sandbox)
        assert (NETNS_DIR / sandbox.netns).exists()
        assert result["interfaces"] == [{"name": "first"}, {"name": "second"}]
        adds = calls(log)
        assert [(c["plugin"], c["command"]) for c in adds] == [("first", "ADD"),
                                                                ("second", "ADD")]
        assert adds[0]["netns"] == str(NETNS_DIR / sandbox.netns) and adds[0]["netns_exists"]
        assert "prevResult" not in adds[0]["conf"]
        assert adds[1]["conf"]["prevResult"]["interfaces"] == [{"name": "first"}]
        assert adds[1]["conf"] | {"prevResult": None} == {
            "type": "second", "x": 1, "cniVersion": "1.0.0", "name": "net", "prevResult": None}
        assert "K8S_POD_NAMESPACE=blue;K8S_POD_NAME=web" in adds[0]["args"]
        assert runtime.cached(sandbox) is not None

        runtime.check(sandbox)
        runtime.delete(sandbox)
    finally:
        runtime.delete_netns(sandbox)
    later = calls(log)[2:]
    assert [(c["plugin"], c["command"]) for c in later] == [
        ("first", "CHECK"), ("second", "CHECK"), ("second", "DEL"), ("first", "DEL")]
    assert all(c["conf"]["prevResult"] == result for c in later)
    assert not (NETNS_DIR / sandbox.netns).exists()
    assert runtime.cached(sandbox) is None
    runtime.delete(sandbox)  # again, with nothing left: DEL without CNI_NETNS
    assert [c["netns"] for c in calls(log)[-2:]] == [None, None]


def test_a_plugins_error_and_a_missing_plugin_are_reported(tmp_path: Path,
                                                           sandbox: Sandbox) -> None:
    bin_dir, log = plugins(tmp_path, "first")
    conflist(tmp_path / "net.d", {"type": "first", "fail": 11})
    runtime = CniRuntime(tmp_path / "net.d", tmp_path / "cache", path=[bin_dir])
    try:
        with pytest.raises(CniPluginError) as again:
            runtime.add(sandbox)
        assert (again.value.plugin, again.value.code, again.value.reason) == (
            "first", 11, "it said no")
        assert again.value.try_again and runtime.cached(sandbox) is None
        assert (NETNS_DIR / sandbox.netns).exists()  # kept for the retry

        conflist(tmp_path / "net.d", {"type": "first", "fail": 100})
        with pytest.raises(CniPluginError) as refused:
            runtime.add(sandbox)
        assert refused.value.code == 100
        # as containerd, a failed sandbox is torn down: DEL, then the namespace
        assert [(c["plugin"], c["command"]) for c in calls(log)[-2:]] == [("first", "ADD"),
                                                                           ("first", "DEL")]
        assert not (NETNS_DIR / sandbox.netns).exists()

        conflist(tmp_path / "net.d", {"type": "first"}, {"type": "tuning"})
        with pytest.raises(CniPluginError) as missing:
            runtime.add(sandbox)
        assert missing.value.plugin == "tuning"
        assert "apt-get install containernetworking-plugins" in str(missing.value)
    finally:
        runtime.delete_netns(sandbox)


def test_no_conflist_is_try_again_later(tmp_path: Path, sandbox: Sandbox) -> None:
    with pytest.raises(CniPluginError) as none:
        CniRuntime(tmp_path / "net.d", tmp_path / "cache", path=[]).add(sandbox)
    assert none.value.try_again and none.value.msg == "no network config found"
    assert not (NETNS_DIR / sandbox.netns).exists()
