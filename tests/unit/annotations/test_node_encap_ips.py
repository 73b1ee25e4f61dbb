"""``k8s.ovn.org/node-encap-ips``: upstream's format, what ``ovnk local`` publishes."""

from __future__ import annotations

import pytest
from ovnk_local.cluster import node_gateway_annotations

from ovnk_core.annotations.node_encap_ips import (
    NODE_ENCAP_IPS_ANNOTATION,
    NodeEncapIpsError,
    parse,
    serialize,
)

pytestmark = pytest.mark.unit


def test_the_local_cluster_publishes_the_node_ip_as_its_encap_ip() -> None:
    annotations = node_gateway_annotations("ovn-worker", "172.18.0.2")
    assert annotations[NODE_ENCAP_IPS_ANNOTATION] == '["172.18.0.2"]'
    assert parse(annotations[NODE_ENCAP_IPS_ANNOTATION]) == ["172.18.0.2"]


def test_written_as_a_sorted_set() -> None:
    assert serialize(["172.18.0.3", "172.18.0.2", "172.18.0.3"]) == \
        '["172.18.0.2","172.18.0.3"]'


@pytest.mark.parametrize(("raw", "message"), [
    ("172.18.0.2", "k8s.ovn.org/node-encap-ips is not valid JSON"),
    ('{"ip": "172.18.0.2"}', "k8s.ovn.org/node-encap-ips must be a JSON list, got dict"),
    ('["172.18.0.300"]', 'k8s.ovn.org/node-encap-ips: "172.18.0.300" is not an IP address'),
    ("[1]", "k8s.ovn.org/node-encap-ips: 1 is not an IP address"),
])
def test_malformed_values_are_refused(raw: str, message: str) -> None:
    with pytest.raises(NodeEncapIpsError) as err:
        parse(raw)
    assert str(err.value).startswith(message)
