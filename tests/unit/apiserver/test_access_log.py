"""The API server's access log: one DEBUG line per request with its status and User-Agent.

It is how a refused request is traced to the program that sent it (upstream's ``ovnkube``
run against ``ovnk local`` by ``scripts/upstream_peer.py``), and ``ovnk local up`` turns it
on through ``OVNK_APISERVER_LOG_LEVEL``, which the API server process inherits
(``test_persistence.test_module_takes_its_log_level_from_the_environment``).
"""

from __future__ import annotations

import http.client
import logging

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import ssl_context_for

AGENT = "vm/ovnkube@8871cd9 (linux/amd64) kubernetes/v0.36.2"


def test_a_refused_request_is_logged_with_its_status_and_user_agent(
        kube_apiserver: ServerHandle, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="ovnk_local.apiserver.handler")
    connection = http.client.HTTPSConnection("127.0.0.1", kube_apiserver.port,
                                             context=ssl_context_for(kube_apiserver))
    connection.request("GET", "/api/v1/namespaces/nowhere", headers={"User-Agent": AGENT})
    response = connection.getresponse()
    response.read()
    connection.close()
    assert response.status == 404
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert f'127.0.0.1 "GET /api/v1/namespaces/nowhere HTTP/1.1" 404 {AGENT}' in lines
