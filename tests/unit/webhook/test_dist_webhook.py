"""``dist/webhook``: what a real cluster installs is what ``ovnk local`` runs and tests.

The configurations call the same paths with the same rules as the ones ``ovnk local``
creates (only how the webhook is reached differs: a Service there, a loopback URL here),
the Deployment's arguments are ones ``ovnk webhook`` accepts, and the local API server
accepts every object as a real one would.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml
from ovnk_local.admission_webhook import LocalWebhook
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for

from ovnk_core.cli import webhook_cmd
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import (
    NAMESPACES,
    SERVICES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    Resource,
)

pytestmark = pytest.mark.unit

DIST = Path(__file__).resolve().parents[3] / "dist" / "webhook"
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", True)
KINDS = {"Deployment": DEPLOYMENTS, "Service": SERVICES,
         "ValidatingWebhookConfiguration": VALIDATING_WEBHOOK_CONFIGURATIONS}


def documents() -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((DIST / "kustomization.yaml").read_text())
    return [doc for name in kustomization["resources"]
            for doc in yaml.safe_load_all((DIST / name).read_text()) if doc]


def without_client_config(configuration: dict[str, Any]) -> dict[str, Any]:
    return {"name": configuration["metadata"]["name"],
            "webhooks": [{k: v for k, v in hook.items() if k != "clientConfig"}
                         for hook in configuration["webhooks"]]}


def test_dist_configurations_are_ovnk_locals_but_for_the_address(tmp_path: Path) -> None:
    local = LocalWebhook(tmp_path, 9443)
    local.ensure_certificates()
    shipped = [doc for doc in documents() if doc["kind"] == "ValidatingWebhookConfiguration"]
    assert [without_client_config(doc) for doc in shipped] == \
        [without_client_config(doc) for doc in local.configurations()]
    for doc, ours in zip(shipped, local.configurations(), strict=True):
        service = doc["webhooks"][0]["clientConfig"]["service"]
        assert ours["webhooks"][0]["clientConfig"]["url"].endswith(service["path"])


def test_the_deployment_runs_ovnk_webhook_with_flags_it_accepts() -> None:
    deployment = next(doc for doc in documents() if doc["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["ovnk", "webhook"]
    parser = argparse.ArgumentParser()
    webhook_cmd.register(parser.add_subparsers())
    args = parser.parse_args(["webhook", *container["args"]])
    mount = container["volumeMounts"][0]["mountPath"]
    assert str(args.webhook_cert_dir) == mount
    service = next(doc for doc in documents() if doc["kind"] == "Service")
    assert service["spec"]["ports"][0]["targetPort"] == args.webhook_port
    assert container["readinessProbe"]["httpGet"]["port"] == args.webhook_port


def test_the_api_server_accepts_every_object(kube_apiserver: ServerHandle) -> None:
    admin = KubeClient(client_for(kube_apiserver))
    admin.create(NAMESPACES, {"metadata": {"name": "ovn-kubernetes"}})
    for doc in documents():
        created = admin.create(KINDS[doc["kind"]], doc, doc["metadata"].get("namespace"))
        assert created["metadata"]["name"] == doc["metadata"]["name"]
