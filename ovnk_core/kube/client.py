"""A generic client over the official ``kubernetes`` client's HTTP machinery.

The generated typed APIs return pydantic models and differ per kind; ovnk
works on plain JSON objects for every kind, CRDs included.  ``KubeClient``
serialises requests through ``kubernetes.client.ApiClient`` (so kubeconfig,
auth, TLS and proxies behave exactly as with the typed APIs) and turns error
replies into the exception classes of ``ovnk_core.kube.errors``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from ovnk_core.kube.cluster_config import cluster_configuration
from ovnk_core.kube.decoding import Undecodable, decode_event, decode_list, decode_object
from ovnk_core.kube.errors import ApiError, NotFound, error_from_response
from ovnk_core.kube.resources import Resource

log = logging.getLogger(__name__)

JSON = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


def api_client_from_kubeconfig(kubeconfig: str = "") -> k8s_client.ApiClient:
    """An ``ApiClient`` from a kubeconfig path, else in-cluster config, else $KUBECONFIG or
    ~/.kube/config (``cluster_config``); a ``ConfigError`` says what is missing."""
    return k8s_client.ApiClient(cluster_configuration(kubeconfig))


def api_client_from_config(config: Mapping[str, Any]) -> k8s_client.ApiClient:
    """An ``ApiClient`` from a kubeconfig already in memory (its current context)."""
    configuration = k8s_client.Configuration()
    k8s_config.load_kube_config_from_dict(dict(config), client_configuration=configuration)
    return k8s_client.ApiClient(configuration)


class KubeClient:
    """CRUD, patch, status and watch on any ``Resource``, with JSON dicts."""

    def __init__(self, api_client: k8s_client.ApiClient) -> None:
        self.api_client = api_client

    def request(self, method: str, path: str, query: Mapping[str, Any] | None = None,
                body: Any = None, content_type: str = "application/json",
                timeout: float | tuple[float, float] | None = 30.0) -> Any:
        """Send one request; returns the raw ``RESTResponse`` (already checked for errors)."""
        headers = {"Accept": "application/json", "Content-Type": content_type}
        params = [(key, _query_value(value)) for key, value in (query or {}).items()
                  if value is not None]
        serialized = self.api_client.param_serialize(
            method=method, resource_path=path, query_params=params, header_params=headers,
            body=body, auth_settings=["BearerToken"])
        response = self.api_client.call_api(*serialized, _request_timeout=timeout)
        if response.status >= 400:
            data = response.read()
            raise error_from_response(method, path, response.status, data)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> JSON:
        response = self.request(method, path, **kwargs)
        data = response.read()
        result: JSON = decode_object(data, f"{method} {path}") if data else {}
        return result

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> JSON:
        return self._json("GET", resource.path(namespace, name))

    def list(self, resource: Resource, namespace: str | None = None,
             label_selector: str | None = None, field_selector: str | None = None,
             resource_version: str | None = None, limit: int | None = None,
             continue_token: str | None = None) -> JSON:
        """The list; items that cannot be decoded are left out (and logged)."""
        result, skipped = self.list_objects(resource, namespace, label_selector,
                                            field_selector, resource_version, limit,
                                            continue_token)
        for item in skipped:
            log.warning("%s %s left out of the list: %s", resource.kind,
                        item.key or "(name unreadable)", item.reason)
        return result

    def list_objects(self, resource: Resource, namespace: str | None = None,
                     label_selector: str | None = None, field_selector: str | None = None,
                     resource_version: str | None = None, limit: int | None = None,
                     continue_token: str | None = None) -> tuple[JSON, Sequence[Undecodable]]:
        """The list, and apart from it the items that cannot be decoded (``decoding``)."""
        path = resource.path(namespace)
        response = self.request("GET", path, query={
            "labelSelector": label_selector, "fieldSelector": field_selector,
            "resourceVersion": resource_version, "limit": limit, "continue": continue_token})
        return decode_list(response.read() or b"{}", f"GET {path}")

    def create(self, resource: Resource, obj: JSON, namespace: str | None = None) -> JSON:
        namespace = namespace or obj.get("metadata", {}).get("namespace")
        body = {"apiVersion": resource.api_version, "kind": resource.kind, **obj}
        return self._json("POST", resource.path(namespace), body=body)

    def update(self, resource: Resource, obj: JSON) -> JSON:
        meta = obj["metadata"]
        body = {"apiVersion": resource.api_version, "kind": resource.kind, **obj}
        return self._json("PUT", resource.path(meta.get("namespace"), meta["name"]), body=body)

    def update_status(self, resource: Resource, obj: JSON) -> JSON:
        meta = obj["metadata"]
        body = {"apiVersion": resource.api_version, "kind": resource.kind, **obj}
        return self._json("PUT", resource.path(meta.get("namespace"), meta["name"], "status"),
                          body=body)

    def patch(self, resource: Resource, name: str, patch: Any, namespace: str | None = None,
              content_type: str = MERGE_PATCH, subresource: str | None = None) -> JSON:
        return self._json("PATCH", resource.path(namespace, name, subresource), body=patch,
                          content_type=content_type)

    def patch_status(self, resource: Resource, name: str, patch: Any,
                     namespace: str | None = None) -> JSON:
        return self.patch(resource, name, patch, namespace, subresource="status")

    def create_subresource(self, resource: Resource, name: str, subresource: str, body: JSON,
                           namespace: str | None = None) -> JSON:
        """POST to a create-only subresource (``serviceaccounts/token``, ``pods/eviction``)."""
        return self._json("POST", resource.path(namespace, name, subresource), body=body)

    def bind(self, resource: Resource, name: str, namespace: str, node: str) -> JSON:
        """POST the ``binding`` subresource: assign the pod to ``node`` (409 if assigned)."""
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        return self._json("POST", resource.path(namespace, name, "binding"), body=body)

    def delete(self, resource: Resource, name: str, namespace: str | None = None,
               propagation_policy: str | None = None,
               preconditions: Mapping[str, str] | None = None) -> JSON:
        body: JSON = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if preconditions:
            body["preconditions"] = dict(preconditions)
        return self._json("DELETE", resource.path(namespace, name), body=body)

    def delete_if_exists(self, resource: Resource, name: str,
                         namespace: str | None = None) -> bool:
        """Delete the object; False when it was already gone (not an error for callers that
        converge to "absent")."""
        try:
            self.delete(resource, name, namespace)
        except NotFound:
            return False
        return True

    def watch(self, resource: Resource, namespace: str | None = None,
              resource_version: str | None = None, label_selector: str | None = None,
              field_selector: str | None = None, timeout_seconds: int | None = None,
              allow_bookmarks: bool = True, read_timeout: float | None = None) -> WatchStream:
        """Open a watch; iterate the returned stream for events until the server ends it.

        ``read_timeout`` bounds the silence between two chunks, so a dead connection is
        noticed (bookmarks keep a healthy one busy).  ``close()`` on the stream, from any
        thread, ends the iteration at once.
        """
        query = {"watch": "true", "resourceVersion": resource_version,
                 "labelSelector": label_selector, "fieldSelector": field_selector,
                 "timeoutSeconds": timeout_seconds,
                 "allowWatchBookmarks": "true" if allow_bookmarks else None}
        timeout = (10.0, read_timeout) if read_timeout else None
        response = self.request("GET", resource.path(namespace), query=query, timeout=timeout)
        return WatchStream(response.response)


class WatchStream:
    """The events of one watch request (``{"type": ..., "object": {...}}``); an event whose
    object cannot be decoded comes as an ``Undecodable`` (``decoding``)."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._closed = False

    def __iter__(self) -> Iterator[JSON | Undecodable]:
        buffer = b""
        try:
            for chunk in self._raw.stream(amt=None, decode_content=False):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield decode_event(line)
            if buffer.strip() and not self._closed:
                yield decode_event(buffer)
        except Exception:
            if not self._closed:
                raise
        finally:
            self._raw.release_conn()

    def close(self) -> None:
        """Unblock a reader waiting on this stream (safe from another thread)."""
        self._closed = True
        try:
            self._raw.shutdown()
        except Exception as exc:  # already closed: nothing left to unblock
            log.debug("watch stream close: %s", exc)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


__all__ = ["JSON", "JSON_PATCH", "MERGE_PATCH", "STRATEGIC_MERGE_PATCH", "ApiError",
           "KubeClient", "api_client_from_config", "api_client_from_kubeconfig"]
