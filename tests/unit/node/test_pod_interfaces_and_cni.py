"""The pod interfaces a node builds from pod-networks, and the CNI endpoint's answers."""

from __future__ import annotations

import json
import socket
import stat
import time
from pathlib import Path

import pytest

from ovnk_core.node.cni_server import (
    CniNotReady,
    CniRequest,
    CniRequestError,
    CniServer,
    _UnixConnection,
    cni_call,
)
from ovnk_core.node.pod_network import PodNetworkError, build_pod_interfaces, host_interface_name

pytestmark = pytest.mark.unit


def pod(networks: object) -> dict[str, object]:
    annotations = {} if networks is None else {
        "k8s.ovn.org/pod-networks": networks if isinstance(networks, str)
        else json.dumps(networks)}
    return {"metadata": {"name": "web", "namespace": "blue", "uid": "u-1",
                         "annotations": annotations}}


def test_interfaces_follow_the_annotation_with_upstream_names() -> None:
    interfaces = build_pod_interfaces(pod({
        "default": {"ip_addresses": ["10.244.0.3/24"], "mac_address": "0a:58:0a:f4:00:03",
                    "role": "infrastructure-locked",
                    "routes": [{"dest": "10.244.0.0/16", "nextHop": "10.244.0.1"}]},
        "blue/blue-network": {"ip_addresses": ["103.103.0.3/24"],
                              "mac_address": "0a:58:67:67:00:03", "role": "primary",
                              "gateway_ips": ["103.103.0.1"]},
        "blue/extra": {"ip_addresses": ["192.168.5.3/24"], "mac_address": "0a:58:c0:a8:05:03",
                       "role": "secondary"}}))
    assert [(i.ifname, i.port_name, i.addresses, i.gateways) for i in interfaces] == [
        ("eth0", "blue_web", ("10.244.0.3/24",), ()),
        ("ovn-udn1", "blue.blue.network_blue_web", ("103.103.0.3/24",), ("103.103.0.1",)),
        ("net1", "blue.extra_blue_web", ("192.168.5.3/24",), ())]
    assert interfaces[0].routes == (("10.244.0.0/16", "10.244.0.1"),)
    names = {i.host_ifname for i in interfaces}
    assert len(names) == 3 and all(len(n) <= 15 for n in names)
    assert host_interface_name("u-1", "default") == interfaces[0].host_ifname


def test_secondary_interfaces_take_the_names_their_selections_ask_for() -> None:
    entry = {"ip_addresses": ["192.168.5.3/24"], "mac_address": "0a:58:c0:a8:05:03",
             "role": "secondary"}
    annotated = pod({"default": {"ip_addresses": ["10.244.0.3/24"],
                                 "mac_address": "0a:58:0a:f4:00:03", "role": "primary"},
                     "blue/a": entry, "blue/b": entry, "blue/c": entry})
    annotated["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] = json.dumps(  # type: ignore[index]
        [{"name": "c"}, {"name": "a", "interface": "phys0"}, {"name": "b"}])
    names = {i.nad_key: i.ifname for i in build_pod_interfaces(annotated)}
    # Multus' naming: the element's interface, else net<position>
    assert names == {"default": "eth0", "blue/c": "net1", "blue/a": "phys0", "blue/b": "net3"}


@pytest.mark.parametrize(("networks", "message"), [
    (None, "has no k8s.ovn.org/pod-networks annotation yet"),
    ("{broken", "is not valid JSON"),
    ({"default": {"ip_addresses": ["not-an-ip"]}}, "invalid pod network entry"),
])
def test_a_bad_annotation_is_a_specific_error(networks: object, message: str) -> None:
    with pytest.raises(PodNetworkError, match=message):
        build_pod_interfaces(pod(networks))


def test_cni_server_answers_ready_not_ready_and_bad_requests(tmp_path: Path) -> None:
    calls: list[str] = []

    def add(request: CniRequest) -> dict[str, object]:
        calls.append(f"add {request.key} {request.uid}")
        if request.name == "waiting":
            raise CniNotReady("waiting for ovn-controller to bind eth0")
        if request.name == "stranger":
            raise CniRequestError("pod blue/stranger is not bound to node n1")
        return {"interfaces": [{"name": "eth0"}]}

    def delete(request: CniRequest) -> dict[str, object]:
        calls.append(f"del {request.key}")
        return {}

    socket_path = tmp_path / "cni" / "n1.sock"
    server = CniServer(socket_path, add, delete)
    server.start()
    assert stat.S_IMODE(socket_path.stat().st_mode) == 0o600  # the kubelet (root) only
    assert stat.S_IMODE(socket_path.parent.stat().st_mode) == 0o700
    try:
        assert cni_call(socket_path, "add", CniRequest("blue", "web", "u-1")) == (
            200, {"interfaces": [{"name": "eth0"}]})
        status, body = cni_call(socket_path, "add", CniRequest("blue", "waiting", "u-2"))
        assert (status, body["error"]) == (503, "waiting for ovn-controller to bind eth0")
        status, body = cni_call(socket_path, "add", CniRequest("blue", "stranger", "u-3"))
        assert status == 400 and "not bound to node n1" in body["error"]
        assert cni_call(socket_path, "del", CniRequest("blue", "web", "u-1")) == (200, {})
        status, body = cni_call(socket_path, "nonsense", CniRequest("blue", "web", "u-1"))
        assert status == 404
        connection = _UnixConnection(socket_path, 5.0)
        connection.request("POST", "/add", body=b'{"namespace": "blue"}')
        response = connection.getresponse()
        assert response.status == 400
        assert "malformed CNI request" in json.loads(response.read())["error"]
        connection.close()
        # a caller whose body arrives late still gets the answer, not a reset connection
        body_late = b'{"namespace": "blue", "name": "web"}'
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
            raw.settimeout(5.0)
            raw.connect(str(socket_path))
            raw.sendall(b"POST /nonsense HTTP/1.1\r\nHost: x\r\n"
                        b"Content-Length: %d\r\n\r\n" % len(body_late))
            time.sleep(0.3)
            raw.sendall(body_late)
            assert raw.recv(4096).startswith(b"HTTP/1.0 404")
        for length, status in (("abc", 400), ("-1", 400), (str(2 << 20), 413)):
            connection = _UnixConnection(socket_path, 5.0)
            connection.putrequest("POST", "/add")
            connection.putheader("Content-Length", length)
            connection.endheaders()
            response = connection.getresponse()
            assert response.status == status, length
            assert "Content-Length must be" in json.loads(response.read())["error"]
            connection.close()
    finally:
        server.stop()
    assert calls == ["add blue/web u-1", "add blue/waiting u-2", "add blue/stranger u-3",
                     "del blue/web"]
    assert not socket_path.exists()
