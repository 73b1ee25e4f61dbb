"""The ID annotations: a node's ``k8s.ovn.org/node-id``, a NAD's ``k8s.ovn.org/network-id``
(with ``network-name``) and ``k8s.ovn.org/tunnel-keys``.  What the cluster manager writes
reads back; a malformed or out-of-range value is an error for ``parse`` and no value for the
lenient object readers."""

from __future__ import annotations

import pytest

from ovnk_core.annotations import AnnotationError, network_id, node_id, tunnel_keys

pytestmark = pytest.mark.unit

DEEP = "[" * 300 + "]" * 300


def nad(annotations: dict[str, str]) -> dict[str, object]:
    return {"metadata": {"name": "blue", "namespace": "ns", "annotations": annotations}}


# -- node-id -------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [node_id.FIRST_NODE_ID, 4, node_id.MAX_NODE_ID - 1])
def test_a_node_id_reads_back(value: int) -> None:
    assert node_id.parse(node_id.serialize(value)) == value


@pytest.mark.parametrize(("raw", "message"), [
    ("four", "k8s.ovn.org/node-id 'four' is not an integer"),
    ("", "k8s.ovn.org/node-id '' is not an integer"),
    ("-3", "k8s.ovn.org/node-id '-3' is not an integer"),
    (" 4", "k8s.ovn.org/node-id ' 4' is not an integer"),
    ("4_0", "k8s.ovn.org/node-id '4_0' is not an integer"),
    ("0", "k8s.ovn.org/node-id '0' is out of range 2..65534"),
    ("1", "k8s.ovn.org/node-id '1' is out of range 2..65534"),
    ("65535", "k8s.ovn.org/node-id '65535' is out of range 2..65534"),
])
def test_a_bad_node_id_is_a_specific_error(raw: str, message: str) -> None:
    with pytest.raises(node_id.NodeIdError) as info:
        node_id.parse(raw)
    assert str(info.value) == message
    assert isinstance(info.value, AnnotationError) and isinstance(info.value, ValueError)


# -- network-id and network-name -------------------------------------------------------------
def test_a_network_id_reads_back() -> None:
    written = network_id.build(7, "ns_blue")
    assert written == {"k8s.ovn.org/network-id": "7", "k8s.ovn.org/network-name": "ns_blue"}
    assert network_id.parse(written[network_id.NETWORK_ID_ANNOTATION]) == 7
    assert network_id.annotated_id(nad(written)) == 7
    assert network_id.accepted_id(nad(written), "ns_blue") == 7
    assert network_id.accepted_id(nad(written), "ns_red") is None  # named another network
    unnamed = {network_id.NETWORK_ID_ANNOTATION: "7"}
    assert network_id.accepted_id(nad(unnamed), "ns_blue") == 7  # written before names were


@pytest.mark.parametrize(("raw", "message"), [
    ("seven", "k8s.ovn.org/network-id 'seven' is not an integer"),
    ("7.0", "k8s.ovn.org/network-id '7.0' is not an integer"),
    ("0", "k8s.ovn.org/network-id '0' is out of range 1..4095"),
    ("4096", "k8s.ovn.org/network-id '4096' is out of range 1..4095"),
])
def test_a_bad_network_id_is_an_error_and_no_accepted_id(raw: str, message: str) -> None:
    with pytest.raises(network_id.NetworkIdError) as info:
        network_id.parse(raw)
    assert str(info.value) == message
    forged = nad({network_id.NETWORK_ID_ANNOTATION: raw,
                  network_id.NETWORK_NAME_ANNOTATION: "ns_blue"})
    assert network_id.annotated_id(forged) is None
    assert network_id.accepted_id(forged, "ns_blue") is None


def test_a_nad_without_annotations_has_no_id() -> None:
    assert network_id.annotated_id({"metadata": {"name": "blue"}}) is None
    assert network_id.accepted_id(nad({}), "ns_blue") is None


# -- tunnel-keys ------------------------------------------------------------------------------
def test_tunnel_keys_read_back() -> None:
    raw = tunnel_keys.serialize([16715779, 16715780])
    assert raw == "[16715779,16715780]"
    assert tunnel_keys.parse(raw) == [16715779, 16715780]
    assert tunnel_keys.parse(tunnel_keys.serialize([])) == []
    assert tunnel_keys.annotated_tunnel_keys(nad({tunnel_keys.TUNNEL_KEYS_ANNOTATION: raw})) \
        == [16715779, 16715780]
    assert tunnel_keys.annotated_tunnel_keys(nad({})) == []


@pytest.mark.parametrize(("raw", "message"), [
    ("[1,", "k8s.ovn.org/tunnel-keys is not valid JSON"),
    (DEEP, "k8s.ovn.org/tunnel-keys is not valid JSON: nested deeper than 200 levels"),
    ('{"a": 1}', "k8s.ovn.org/tunnel-keys must be a JSON list, got dict"),
    ('[1, "2"]', 'k8s.ovn.org/tunnel-keys: "2" is not an integer'),
    ("[true]", "k8s.ovn.org/tunnel-keys: true is not an integer"),
    ("[1.5]", "k8s.ovn.org/tunnel-keys: 1.5 is not an integer"),
    ("[-1]", "k8s.ovn.org/tunnel-keys: -1 is out of range 0..16777215"),
    ("[16777216]", "k8s.ovn.org/tunnel-keys: 16777216 is out of range 0..16777215"),
    ("[5, 5]", "k8s.ovn.org/tunnel-keys: [5, 5] has duplicates"),
])
def test_bad_tunnel_keys_are_an_error_and_no_keys(raw: str, message: str) -> None:
    with pytest.raises(tunnel_keys.TunnelKeysError) as info:
        tunnel_keys.parse(raw)
    assert str(info.value).startswith(message)
    assert tunnel_keys.annotated_tunnel_keys(nad({tunnel_keys.TUNNEL_KEYS_ANNOTATION: raw})) \
        == []
