"""The local API server settles a Service's IP families and ClusterIPs as kube-apiserver
does (``ipFamilyPolicy``, ``ipFamilies``, ``clusterIPs``), on a dual-stack cluster and on a
single-stack one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from ovnk_local.apiserver.server import ServerOptions
from ovnk_local.testing.apiserver_fixtures import ServerFactory, client_for

pytestmark = pytest.mark.unit
DUAL = ("10.96.0.0/16", "fd00:10:96::/112")


@pytest.fixture
def dual(kube_apiserver_factory: ServerFactory) -> Iterator[client.CoreV1Api]:
    """A dual-stack cluster's API server (IPv4 first, as kind's ``dual``)."""
    api = client_for(kube_apiserver_factory(ServerOptions(bookmark_interval=1.0,
                                                          service_cidrs=DUAL)))
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": "blue"}})
    yield core
    api.close()


def service(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"ports": [{"port": 80}], "selector": {"a": "b"},
                                                 **spec}}


def created(core: client.CoreV1Api, name: str, **spec: Any) -> Any:
    return core.create_namespaced_service("blue", service(name, **spec)).spec


def refused(core: client.CoreV1Api, name: str, **spec: Any) -> str:
    with pytest.raises(ApiException) as err:
        core.create_namespaced_service("blue", service(name, **spec))
    assert err.value.status == 422
    return str(json.loads(err.value.body)["message"])


def test_a_dual_stack_cluster_gives_both_families_to_dual_stack_policies(
        dual: client.CoreV1Api) -> None:
    single = created(dual, "single")
    assert (single.ip_family_policy, single.ip_families) == ("SingleStack", ["IPv4"])
    assert len(single.cluster_ips) == 1 and single.cluster_ip == single.cluster_ips[0]
    for policy in ("PreferDualStack", "RequireDualStack"):
        both = created(dual, policy.lower(), ipFamilyPolicy=policy)
        assert both.ip_families == ["IPv4", "IPv6"]
        v4, v6 = both.cluster_ips
        assert v4.startswith("10.96.") and v6.startswith("fd00:10:96::")
    # the primary family is the one asked first
    v6_first = created(dual, "v6-first", ipFamilyPolicy="PreferDualStack",
                       ipFamilies=["IPv6"])
    assert v6_first.ip_families == ["IPv6", "IPv4"]
    assert v6_first.cluster_ip.startswith("fd00:10:96::")
    # an IPv6 ClusterIP asked for makes the service IPv6
    asked = created(dual, "asked", clusterIP="fd00:10:96::99")
    assert (asked.ip_families, asked.cluster_ips) == (["IPv6"], ["fd00:10:96::99"])
    both = created(dual, "both-asked", ipFamilyPolicy="RequireDualStack",
                   clusterIPs=["10.96.0.99", "fd00:10:96::98"])
    assert both.ip_families == ["IPv4", "IPv6"]
    # an update that leaves them out keeps them
    kept = dual.patch_namespaced_service("both-asked", "blue", {"spec": {"ports": [
        {"port": 81}]}}).spec
    assert kept.cluster_ips == ["10.96.0.99", "fd00:10:96::98"]


def test_contradictions_are_kube_apiservers_errors(dual: client.CoreV1Api) -> None:
    assert refused(dual, "two", ipFamilies=["IPv4", "IPv6"]) == (
        'Service "two" is invalid: spec.ipFamilyPolicy: Invalid value: "SingleStack": must be '
        "'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified")
    assert "when multiple cluster IPs are specified" in refused(
        dual, "two-ips", clusterIPs=["10.96.0.77", "fd00:10:96::77"])


def test_a_single_stack_cluster_refuses_what_needs_the_other_family(
        kube_apiserver_factory: ServerFactory) -> None:
    api = client_for(kube_apiserver_factory())  # IPv4 only (10.96.0.0/16)
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": "blue"}})
    prefer = created(core, "prefer", ipFamilyPolicy="PreferDualStack")
    assert (prefer.ip_families, len(prefer.cluster_ips)) == (["IPv4"], 1)
    assert refused(core, "require", ipFamilyPolicy="RequireDualStack") == (
        'Service "require" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": '
        "this cluster is not configured for dual-stack services")
    assert refused(core, "v6", ipFamilies=["IPv6"]) == (
        'Service "v6" is invalid: spec.ipFamilies[0]: Invalid value: "IPv6": not configured '
        "on this cluster")
    api.close()
