"""The UDN/CUDN topology sections come from the loaded topology plugins.

A section the core has never heard of (``Flat``, defined here as a third
party would) is validated, rendered into the NAD and put into the CRDs through
the ``UdnSection`` contract alone; a cluster whose configuration leaves a
topology plugin out rejects networks of that topology at apply time, with the
enum error a real cluster prints for CRDs generated without it plus why.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for, with_crds

from ovnk_core.admission.contract import FieldError as ApiFieldError
from ovnk_core.admission.field_errors import FieldError
from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.config import Config
from ovnk_core.errors import NetworkConfigError, PluginLoadError
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.errors import Invalid
from ovnk_core.kube.resources import CRDS, CUDNS, NAMESPACES, NODES
from ovnk_core.manifests.crd_schemas import role
from ovnk_core.manifests.crds import build_crds
from ovnk_core.networks.netconf import NetConf
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.waiting import wait_until
from ovnk_core.topology import Topology
from ovnk_core.udn import admission
from ovnk_core.udn.admission import UdnAdmission
from ovnk_core.udn.nad import build_cni_config
from ovnk_core.udn.section_checks import check_role, immutable_errors
from ovnk_core.udn.sections import UdnSections, installed_sections, sections_for
from ovnk_core.udn.validation import validate_cudn, validate_udn
from ovnk_core.udn_section import EVPN, MAC_VRF, PRIMARY, SECONDARY, UdnSection

pytestmark = pytest.mark.unit

JSON = dict[str, Any]
CONFIG = udn_config()
WITHOUT_LAST = udn_config(topologies="layer3,layer2")  # the third bundled topology left out
MISSING = ('spec.network.topology: Unsupported value: "Localnet": supported values: '
           '"Layer2", "Layer3" (no enabled topology plugin provides "Localnet")')


class FlatSection(UdnSection):
    """A third party's section: a VNI, EVPN for primary networks with a MAC-VRF."""

    topology = "Flat"
    key = "flat"
    transports = frozenset({EVPN})
    evpn_vrfs = ((MAC_VRF, True),)

    def schema(self) -> JSON:
        return {"type": "object", "required": ["role", "vni"], "properties": {
            "role": role([PRIMARY, SECONDARY]), "vni": {"type": "integer"}}}

    def validate(self, section: JSON, old: JSON | None, path: str) -> list[FieldError]:
        errors = check_role(section, path, (PRIMARY, SECONDARY))
        if not isinstance(section.get("vni"), int):
            errors.append(FieldError(f"{path}.vni", "vni must be an integer", section.get("vni")))
        return errors + immutable_errors(section, old, path, "Flat is immutable")

    def render(self, section: JSON, role: str, config: Config) -> JSON:
        return {"vni": section["vni"], "name": "not-the-network-name"}

    def default_mtu(self, config: Config) -> int:
        return 9000


class FlatTopology(Topology):
    name = "flat"
    udn_section = FlatSection()

    def parse_netconf(self, netconf: NetConf) -> NetInfo:
        # only the section is exercised here; a NAD of this topology is refused clearly
        raise NetworkConfigError("the flat topology of these tests parses no netconf")


WITH_FLAT = UdnSections([FlatSection(), *installed_sections()])


def flat_udn(**section: Any) -> JSON:
    return {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
            "metadata": {"name": "f", "namespace": "ns", "uid": "u1"},
            "spec": {"topology": "Flat", "flat": {"role": "Secondary", "vni": 7, **section}}}


def cudn(network: JSON, name: str = "c") -> JSON:
    return {"apiVersion": "k8s.ovn.org/v1", "kind": "ClusterUserDefinedNetwork",
            "metadata": {"name": name},
            "spec": {"namespaceSelector": {"matchLabels": {"team": "a"}}, "network": network}}


LOCALNET = {"topology": "Localnet", "localnet": {"role": "Secondary",
                                                 "physicalNetworkName": "physnet",
                                                 "subnets": ["10.50.0.0/24"]}}


# -- a section the core does not know -----------------------------------------------------------
def test_a_third_party_section_renders_its_keys_after_the_common_ones() -> None:
    cni = build_cni_config(flat_udn(), "ns", CONFIG, WITH_FLAT)
    assert cni == {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": "ns_f",
                   "netAttachDefName": "ns/f", "topology": "flat", "role": "secondary",
                   "mtu": 9000, "vni": 7}
    assert list(cni)[-1] == "vni"  # the section's keys come last; the core's "name" wins


def test_a_third_party_section_is_validated_by_its_own_rules() -> None:
    assert validate_udn(flat_udn(), sections=WITH_FLAT) == []
    assert [str(e) for e in validate_udn(flat_udn(vni="x"), sections=WITH_FLAT)] == [
        'spec.flat.vni: Invalid value: "x": vni must be an integer']
    old = flat_udn()
    assert [str(e) for e in validate_udn(flat_udn(vni=8), old, WITH_FLAT)] == [
        'spec.flat: Invalid value: Flat is immutable']
    both = flat_udn()
    both["spec"]["layer3"] = {"role": "Primary", "subnets": [{"cidr": "10.1.0.0/16"}]}
    assert 'spec: Invalid value: spec.layer3 is required when topology is Layer3 ' \
           'and forbidden otherwise' in [str(e) for e in validate_udn(both, sections=WITH_FLAT)]
    # without the plugin, the value is unknown, and the message says why
    assert [str(e) for e in validate_udn(flat_udn())] == [
        'spec.topology: Unsupported value: "Flat": supported values: "Layer2", "Layer3" '
        '(no enabled topology plugin provides "Flat")']


def test_the_transport_rules_read_the_sections() -> None:
    flat: JSON = {"role": "Primary", "vni": 7}
    network = {"topology": "Flat", "flat": flat, "transport": EVPN,
               "evpn": {"vtep": "v", "ipVRF": {"vni": 1}}}
    assert [str(e) for e in validate_cudn(cudn(network), sections=WITH_FLAT)] == [
        'spec.network: Invalid value: spec.evpn.macVRF field is required for Flat '
        "topology when transport is 'EVPN'"]
    flat["role"] = "Secondary"
    assert 'spec.network: Invalid value: transport \'EVPN\' is only supported for ' \
           'Flat or Layer2 or Layer3 primary networks' in \
        [str(e) for e in validate_cudn(cudn(network), sections=WITH_FLAT)]


def test_the_crds_are_made_of_the_sections() -> None:
    udn_crd, cudn_crd = build_crds(WITH_FLAT)[:2]
    spec = udn_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["topology"]["enum"] == ["Flat", "Layer2", "Layer3"]
    assert list(spec["properties"]) == ["topology", "layer3", "layer2", "flat"]
    assert spec["properties"]["flat"] == FlatSection().schema()
    assert spec["x-kubernetes-validations"][-1]["message"] == (
        "spec.flat is required when topology is Flat and forbidden otherwise")
    network = cudn_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
        "spec"]["properties"]["network"]
    assert network["properties"]["topology"]["enum"] == ["Flat", "Layer2", "Layer3",
                                                         "Localnet"]
    rules = {rule["message"]: rule["rule"] for rule in network["x-kubernetes-validations"]}
    assert rules["transport 'EVPN' is only supported for Flat or Layer2 or Layer3 primary "
                 "networks"].endswith("|| (self.topology == 'Flat' && self.flat.role == "
                                      "'Primary')")
    assert rules["spec.evpn.macVRF field is required for Flat topology when transport is "
                 "'EVPN'"] == ("!has(self.evpn) || self.topology != 'Flat' || "
                               "has(self.evpn.macVRF)")


def test_the_crds_of_a_cluster_without_a_topology_leave_it_out() -> None:
    cudn_crd = build_crds(sections_for(WITHOUT_LAST))[1]
    network = cudn_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
        "spec"]["properties"]["network"]
    assert network["properties"]["topology"]["enum"] == ["Layer2", "Layer3"]
    assert "localnet" not in network["properties"]
    assert build_crds(sections_for(CONFIG)) == build_crds()  # every bundled one: as shipped


def test_a_section_must_name_its_plugin_and_be_unique() -> None:
    assert [s.topology for s in UdnSections.of([FlatTopology(CONFIG)])] == ["Flat"]

    class Misnamed(FlatTopology):
        name = "flat2"

    with pytest.raises(PluginLoadError, match="'Flat' in lower case must be the plugin's name"):
        UdnSections.of([Misnamed(CONFIG)])
    with pytest.raises(PluginLoadError, match="several topology plugins provide the UDN "
                                              "section topology 'Flat'"):
        UdnSections([FlatSection(), FlatSection()])


# -- a cluster without a topology's plugin -------------------------------------------------------
def test_admission_without_the_plugin_rejects_its_topology_clearly() -> None:
    hooks = UdnAdmission.for_config(WITHOUT_LAST)
    errors = hooks.validate_cudn_hook("CREATE", cudn(LOCALNET), None)
    assert errors is not None
    assert [str(e) for e in errors] == [MISSING]
    assert [e.reason for e in errors] == ["FieldValueNotSupported"]
    layer2 = {"topology": "Layer2", "layer2": {"role": "Secondary", "subnets": ["10.5.0.0/24"]}}
    assert hooks.validate_cudn_hook("CREATE", cudn(layer2), None) is None
    # with every bundled plugin, the same network is admitted
    assert UdnAdmission.for_config(CONFIG).validate_cudn_hook("CREATE", cudn(LOCALNET),
                                                              None) is None


class Registry:
    def __init__(self) -> None:
        self.hooks: dict[str, Any] = {}

    def register_validating(self, group: str, resource: str, hook: Any, **_: Any) -> None:
        self.hooks[resource] = hook

    def register_mutating(self, group: str, resource: str, hook: Any, **_: Any) -> None:
        raise AssertionError("no mutating hook expected")


def test_the_entry_point_takes_the_topologies_from_the_configuration(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OVNK_TOPOLOGIES", "layer3,layer2")
    registry = Registry()
    admission.register(registry)
    errors: list[ApiFieldError] = registry.hooks["clusteruserdefinednetworks"](
        "CREATE", cudn(LOCALNET), None)
    assert [str(e) for e in errors] == [MISSING]


def test_the_api_server_rejects_it_at_apply_time(kube_apiserver: ServerHandle) -> None:
    UdnAdmission.for_config(WITHOUT_LAST).register(kube_apiserver.admission)
    api = with_crds(kube_apiserver)
    with pytest.raises(Invalid) as info:
        api.create(CUDNS, cudn(LOCALNET, "phys"))
    assert str(info.value).endswith(
        f'ClusterUserDefinedNetwork.k8s.ovn.org "phys" is invalid: {MISSING}')


def test_crds_generated_without_it_make_the_server_reject_it(
        kube_apiserver: ServerHandle) -> None:
    api = KubeClient(client_for(kube_apiserver))
    for crd in build_crds(sections_for(WITHOUT_LAST)):
        api.create(CRDS, crd)
    wait_until(lambda: api.list(CUDNS) is not None)
    with pytest.raises(Invalid) as info:
        api.create(CUDNS, cudn(LOCALNET, "phys"))
    assert 'spec.network.topology: Unsupported value: "Localnet": supported values: ' \
           '"Layer2", "Layer3"' in str(info.value)


def test_a_cluster_manager_without_the_plugin_says_so_on_the_network(
        kube_apiserver: ServerHandle) -> None:
    """A network admitted before the plugin was disabled is not rendered: the condition
    names its topology and the topologies this cluster manager has."""
    api = with_crds(kube_apiserver)
    api.create(NODES, {"metadata": {"name": "ovn-worker"}})
    api.create(NAMESPACES, {"metadata": {"name": "a", "labels": {"team": "a"}}})
    api.create(CUDNS, cudn(LOCALNET, "phys"))
    manager = ClusterManager(WITHOUT_LAST, api, PluginHost.load(WITHOUT_LAST), identity="t")
    manager.start_controllers()
    try:
        def condition() -> JSON:
            status = api.get(CUDNS, "phys").get("status") or {}
            found = [c for c in status.get("conditions") or [] if c["type"] == "NetworkCreated"]
            return found[0] if found else {}
        created = wait_until(condition)
        assert created["status"] == "False"
        assert "topology 'Localnet' is not supported: no enabled topology plugin provides it " \
               "(available: Layer2, Layer3)" in created["message"], json.dumps(created)
    finally:
        manager.stop_controllers()
