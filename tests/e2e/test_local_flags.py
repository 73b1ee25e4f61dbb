"""``ovnk local up`` with component flags: every ovnk component runs with them.

``ovnk local up --enable-dynamic-udn-allocation --udn-deletion-grace-period=5s``: the
cluster manager, the zone controller and the node agents get the flags on their command
lines (``cluster.json``), load them (each one logs the feature plugins it loaded, and
``dynamic`` is one of them only with that flag), survive a restart with them, and ``ovnk
local status`` shows them.  ``--topologies=layer3`` reaches the API server too: its CRDs and
its admission hooks offer only Layer3, so a Layer2 UDN is refused at apply time.  The
argument plumbing itself is unit-tested (``tests/unit/local/test_component_settings.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from ovnk_local.cluster import LocalCluster

from ovnk_core.cli.main import main
from ovnk_core.kube.apply import apply_documents
from ovnk_core.kube.client import KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.errors import Invalid
from ovnk_core.kube.resources import CRDS, NAMESPACES, UDNS
from ovnk_core.manifests.crds import build_crds
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.sections import installed_sections

FLAGS = ["--enable-dynamic-udn-allocation=true", "--udn-deletion-grace-period=5s",
         "--topologies=layer3"]  # in the option table's order
LOADED = re.compile(r"plugins loaded: topologies=\S* features=(\S*)")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    directory = tmp_path_factory.mktemp("local-flags") / ".ovnk"
    assert main(["local", "up", "--dir", str(directory), "--nodes", "1", "--timeout", "90",
                 "--enable-dynamic-udn-allocation", "--udn-deletion-grace-period=5s",
                 "--topologies", "layer3"]) == 0
    local = LocalCluster(directory)
    yield local
    local.down()


def features_loaded(log: Path, since: int = 0) -> list[str]:
    """The feature plugins each start of the process logged, in order."""
    text = log.read_bytes()[since:].decode(errors="replace")
    return [match.group(1) for match in LOADED.finditer(text)]


def test_every_ovnk_component_gets_and_loads_the_flags(cluster: LocalCluster) -> None:
    state = cluster.state()
    assert state.component_flags == FLAGS
    ovnk = {name: record for name, record in state.processes.items()
            if name in ("cluster-manager", "controller") or name.endswith("/node-agent")}
    assert {"cluster-manager", "controller"} <= set(ovnk)
    if state.dataplane:
        assert "ovn-worker/node-agent" in ovnk
    for name, record in ovnk.items():
        assert record.args[-len(FLAGS):] == FLAGS, name
        loaded = wait_until(lambda r=record: features_loaded(Path(r.log)),  # type: ignore[misc]
                            what=f"{name} to log its plugins")
        assert "dynamic" in loaded[-1].split(","), (name, loaded)
    # the stand-ins are not ovnk components: they get none
    assert not set(FLAGS) & set(state.processes["kubelet"].args)


def test_status_shows_the_flags(cluster: LocalCluster,
                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "status", "--dir", str(cluster.dir)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"ovnk components' config: {cluster.config_file} (ovnk local's settings)"
    assert out[1] == "ovnk components' flags:  " + " ".join(FLAGS)


def test_a_restarted_component_keeps_the_flags(cluster: LocalCluster) -> None:
    before = Path(cluster.state().processes["controller"].log).stat().st_size
    assert cluster.restart("controller") == ["controller"]
    record = cluster.state().processes["controller"]
    assert record.args[-len(FLAGS):] == FLAGS
    loaded = wait_until(lambda: features_loaded(Path(record.log), before),
                        what="the restarted controller to log its plugins")
    assert "dynamic" in loaded[-1].split(",")
    assert json.loads(cluster.state_file.read_text())["component_flags"] == FLAGS


def udn(name: str, topology: str) -> dict[str, object]:
    section: dict[str, object] = {"role": "Primary", "subnets": ["10.200.0.0/16"]}
    if topology == "Layer3":
        section = {"role": "Primary", "subnets": [{"cidr": "10.128.0.0/16"}]}
    return {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
            "metadata": {"name": name, "namespace": "flags"},
            "spec": {"topology": topology, topology.lower(): section}}


def test_the_api_server_offers_only_the_enabled_topologies(cluster: LocalCluster) -> None:
    client = KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig)))
    crd = client.get(CRDS, "userdefinednetworks.k8s.ovn.org")
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["topology"]["enum"] == ["Layer3"]
    assert "layer2" not in spec["properties"]
    client.create(NAMESPACES, {"metadata": {"name": "flags", "labels": {
        "k8s.ovn.org/primary-user-defined-network": ""}}})
    client.create(UDNS, udn("l3", "Layer3"), "flags")
    with pytest.raises(Invalid) as refused:
        client.create(UDNS, udn("l2", "Layer2"), "flags")
    assert 'spec.topology: Unsupported value: "Layer2": supported values: "Layer3"' \
        in str(refused.value)
    # with CRDs offering every installed topology, its admission hooks still refuse it: they
    # read the components' configuration (OVNK_CONFIG and the flags as OVNK_* variables)
    apply_documents(client, build_crds(installed_sections()))
    with pytest.raises(Invalid) as refused:
        client.create(UDNS, udn("l2", "Layer2"), "flags")
    assert '(no enabled topology plugin provides "Layer2")' in str(refused.value)
