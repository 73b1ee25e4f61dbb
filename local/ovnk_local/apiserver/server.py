"""The local Kubernetes API server: request routing, startup and shutdown.

``serve()`` starts the server on a background thread and returns a handle
(actual port, URL, the store, the admission registry, ``stop()``);
``python -m ovnk_local.apiserver`` runs it as a process.  It serves HTTPS only;
every request is authenticated (client certificate or bearer token; only the
health endpoints admit anonymous requests), may impersonate, and is
authorized by RBAC before it is dispatched to discovery, OpenAPI, health
endpoints, the review kinds and the REST operations of ``rest.Api``;
kubectl's Table and aggregated-discovery content types are honoured when
asked for.  Binding to a non-loopback address must be asked for explicitly.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ovnk_core.node.netns import NETNS_DIR
from ovnk_local.apiserver import (
    discovery,
    exec_session,
    listoptions,
    managedfields,
    negotiation,
    openapi,
    routing,
    websocket,
)
from ovnk_local.apiserver.admission import AdmissionRegistry, load_plugins
from ovnk_local.apiserver.authn import MASTERS, UserInfo
from ovnk_local.apiserver.authz import Attributes, resource_verb
from ovnk_local.apiserver.builtins import builtin_types
from ovnk_local.apiserver.crds import CRD_STORAGE, types_from_crd
from ovnk_local.apiserver.default_serviceaccounts import DefaultServiceAccounts
from ovnk_local.apiserver.errors import (
    JSON,
    ApiStatusError,
    bad_request,
    conflict,
    method_not_allowed,
    path_not_found,
)
from ovnk_local.apiserver.go_json import DecodeError, round_trip
from ovnk_local.apiserver.handler import ApiHTTPServer, Request
from ovnk_local.apiserver.kubeconfig import write_kubeconfig
from ovnk_local.apiserver.objectmeta import key_of
from ovnk_local.apiserver.persistence import Persistence, read_snapshot
from ovnk_local.apiserver.rbac import STORAGES as RBAC_STORAGES
from ovnk_local.apiserver.rbac import escalation_check, validate_rbac_object
from ovnk_local.apiserver.rbac_aggregation import ClusterRoleAggregator
from ovnk_local.apiserver.rbac_bootstrap import AUTOUPDATE, bootstrap_policy
from ovnk_local.apiserver.resources import ResourceRegistry
from ovnk_local.apiserver.rest import Api, Result, WriteOptions, go_type
from ovnk_local.apiserver.routing import Route
from ovnk_local.apiserver.security import ADMIN_USER, Security, SecurityOptions, is_loopback
from ovnk_local.apiserver.selectors import matcher
from ovnk_local.apiserver.services import ServiceAllocator
from ovnk_local.apiserver.store import Store
from ovnk_local.apiserver.table import to_table
from ovnk_local.apiserver.version import version_info
from ovnk_local.apiserver.watch import WatchRequest, stream
from ovnk_local.apiserver.webhook_calls import WebhookCaller

log = logging.getLogger(__name__)

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NOT_ALLOWED = "the server does not allow this method on the requested resource"


@dataclass
class ServerOptions:
    """Tunables (tests shrink the history and the bookmark interval).

    ``admission_modules`` (``module:function``) and, when ``admission_entry_points`` is
    set, the ``ovnk.admission`` entry points are called with the admission registry
    before the server accepts requests.
    """

    history_size: int = 10000
    bookmark_interval: float = 60.0
    max_watch_queue: int = 100000
    default_watch_timeout: float = 1800.0
    service_cidrs: tuple[str, ...] = ("10.96.0.0/16",)
    persist_interval: float = 0.2
    admission_modules: tuple[str, ...] = ()
    admission_entry_points: bool = False
    default_namespaces: tuple[str, ...] = DEFAULT_NAMESPACES
    # pods/exec runs commands in the network namespace this names ({node}, {namespace},
    # {name}); empty: exec is not served (no pod has a namespace on this machine)
    pod_netns_template: str = ""
    # the same for a hostNetwork pod: its node's namespace ({node}); empty: not served
    node_netns_template: str = ""
    # TLS and authentication files (required: the server has no insecure mode)
    security: SecurityOptions | None = None
    # serve on an address other than loopback (TLS and authentication stay on)
    allow_non_loopback: bool = False


class ApiServer:
    """State plus request dispatch; one instance per running server."""

    def __init__(self, options: ServerOptions) -> None:
        if options.security is None:
            raise ValueError("the API server needs TLS and authentication files "
                             "(ServerOptions.security); it has no insecure mode")
        self.options = options
        self.store = Store(options.history_size, options.max_watch_queue)
        self.registry = ResourceRegistry(builtin_types())
        self.admission = AdmissionRegistry(WebhookCaller(self.store))
        self.api = Api(self.store, self.registry, self.admission,
                       ServiceAllocator(options.service_cidrs))
        self.security = Security(options.security, self.store)
        self.aggregator = ClusterRoleAggregator(self.store, self.api, self.registry)
        self.service_accounts = DefaultServiceAccounts(self.store, self.api, self.registry)
        for storage in RBAC_STORAGES:
            self.admission.register_validating(
                "rbac.authorization.k8s.io", storage.split("/", 1)[1],
                self._rbac_write_rule(storage), name="rbac", operations=("CREATE", "UPDATE"),
                with_user=True)

    def _rbac_write_rule(self, storage: str) -> Any:
        def rule(operation: str, new: JSON | None, old: JSON | None,
                 user: UserInfo | None) -> Any:
            if new is None:
                return None
            problems = validate_rbac_object(storage, new, old)
            if problems:
                return problems
            if user is not None:
                error = escalation_check(self.security.rbac, self.security.authorize, storage,
                                         new, user)
                if error is not None:
                    raise error
            return None
        return rule

    def bootstrap(self, snapshot: JSON | None) -> None:
        """Load a snapshot, serve its CRDs, make sure the default namespaces exist and put
        the bootstrap RBAC policy in place."""
        if snapshot is not None:
            self.store.load(self._through_go_types(snapshot))
            self.security.rbac.rebuild()
        for crd in self.store.objects(CRD_STORAGE)[0]:
            self.registry.replace_crd(crd["metadata"]["name"], types_from_crd(crd))
        namespaces = self.registry.get("", "v1", "namespaces")
        assert namespaces is not None
        for name in self.options.default_namespaces:
            if self.store.get(namespaces.storage, "", name) is None:
                self.api.create(namespaces, "", {"metadata": {"name": name}}, WriteOptions())
        self._reconcile_bootstrap_policy()

    def _through_go_types(self, snapshot: JSON) -> JSON:
        """The snapshot's built-in objects as this server stores them (one written by an
        older server may lack fields Kubernetes always serializes)."""
        for storage, objects in (snapshot.get("objects") or {}).items():
            rt = self.registry.storage_type(storage)
            type_key = go_type(rt) if rt is not None else None
            if type_key is None:
                continue
            for index, obj in enumerate(objects):
                try:
                    objects[index] = round_trip(type_key, obj)
                except DecodeError as exc:  # kept as it was: never lose state
                    log.warning("snapshot: %s %s does not decode: %s", storage, key_of(obj),
                                exc)
        return snapshot

    def _reconcile_bootstrap_policy(self) -> None:
        """Create missing default roles and bindings; put back the rules, subjects and
        labels (which feed aggregated roles) of those still marked ``autoupdate: "true"``."""
        for storage, wanted in bootstrap_policy():
            rt = self.registry.storage_type(storage)
            assert rt is not None
            name = wanted["metadata"]["name"]
            current = self.store.get(storage, "", name)
            if current is None:
                self.api.create(rt, "", wanted, WriteOptions())
                continue
            annotations = current["metadata"].get("annotations") or {}
            if annotations.get(AUTOUPDATE) == "false":
                continue
            if "aggregationRule" in wanted:  # its rules belong to the aggregation controller
                fields: tuple[str, ...] = ("aggregationRule",)
            elif "rules" in wanted:
                fields = ("rules",)
            else:
                fields = ("roleRef", "subjects")
            labels = current["metadata"].get("labels") or {}
            wanted_labels = {**labels, **wanted["metadata"]["labels"]}
            if all(current.get(f) == wanted.get(f) for f in fields) and labels == wanted_labels:
                continue
            updated = {**current, **{f: wanted[f] for f in fields},
                       "metadata": {**current["metadata"], "labels": wanted_labels}}
            self.api.update(rt, "", name, updated, WriteOptions())

    # -- dispatch --------------------------------------------------------------------------
    def __call__(self, request: Request) -> None:
        path = request.path.rstrip("/") or "/"
        user = self.security.authenticate(path, request.headers, request.peer_certificate())
        request.user = user
        route = routing.resolve(self.registry, path)
        if route is None:
            self.security.require(Attributes(user, request.method.lower(), False,
                                             path=request.path))
            self._non_resource(request, path)
            return
        watch = _truthy(request.query.get("watch"))
        request.expected_kind = (route.rt.api_version, route.rt.kind)
        request.custom = route.rt.custom
        try:  # negotiated first: a refusal (403 ...) is encoded as the client asked
            request.output = negotiation.negotiate(request.accept, route.rt.custom, watch)
            not_acceptable = None
        except ApiStatusError as exc:
            not_acceptable = exc
        self.security.require(Attributes(
            user, resource_verb(request.method, bool(route.name), watch, route.subresource),
            True, route.rt.group, route.rt.version, route.rt.plural, route.subresource,
            route.namespace, route.name))
        if not_acceptable is not None and route.subresource != "exec":
            raise not_acceptable
        self._resource(request, route)

    def _non_resource(self, request: Request, path: str) -> None:
        if path in ("/healthz", "/livez", "/readyz") or path.startswith(
                ("/healthz/", "/livez/", "/readyz/")):
            request.reply(200, "ok")
            return
        if path == "/version":
            request.reply(200, version_info())
            return
        document = self._discovery(request, path) or self._openapi(path)
        if document is not None:
            aggregated = path in ("/api", "/apis") and routing.wants_aggregated(request.accept)
            content_type = "application/json"
            if aggregated:
                content_type = (discovery.AGGREGATED_V2 if aggregated == "v2"
                                else discovery.AGGREGATED_V2BETA1)
            request.reply(200, document, content_type)
            return
        raise path_not_found(path)

    def _discovery(self, request: Request, path: str) -> JSON | None:
        aggregated = routing.wants_aggregated(request.accept)
        if path == "/api":
            if aggregated:
                return discovery.aggregated(self.registry, True,
                                            f"apidiscovery.k8s.io/{aggregated}")
            return discovery.api_versions()
        if path == "/apis":
            if aggregated:
                return discovery.aggregated(self.registry, False,
                                            f"apidiscovery.k8s.io/{aggregated}")
            return discovery.api_group_list(self.registry)
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) == 2:
            return discovery.resource_list(self.registry, "", parts[1])
        if parts[0] == "apis" and len(parts) == 2:
            versions = dict(self.registry.groups()).get(parts[1])
            return discovery.api_group(parts[1], versions) if versions else None
        if parts[0] == "apis" and len(parts) == 3:
            return discovery.resource_list(self.registry, parts[1], parts[2])
        return None

    def _openapi(self, path: str) -> JSON | None:
        if path == "/openapi/v3":
            return openapi.root_document(self.registry)
        parts = path.strip("/").split("/")
        if parts[:2] != ["openapi", "v3"]:
            return None
        if parts[2:3] == ["api"] and len(parts) == 4:
            return openapi.group_version_document(self.registry, "", parts[3])
        if parts[2:3] == ["apis"] and len(parts) == 5:
            return openapi.group_version_document(self.registry, parts[3], parts[4])
        return None

    def _resource(self, request: Request, route: Route) -> None:
        rt, method, q = route.rt, request.method, request.query
        if route.subresource == "exec":
            self._exec(request, route)
            return
        if rt.ephemeral:
            if method != "POST" or route.name:
                raise method_not_allowed(NOT_ALLOWED)
            assert request.user is not None
            request.reply(201, self.security.reviews.answer(rt, route.namespace,
                                                            request.json_body(), request.user))
            return
        if route.subresource == "token" and method == "POST":
            account = self.api.get(rt, route.namespace, route.name)
            request.reply(201, self.security.tokens.token_request(account, request.json_body()))
            return
        manager = q.get("fieldManager") or managedfields.manager_from_user_agent(
            request.headers.get("User-Agent") or "")
        options = WriteOptions(dry_run=q.get("dryRun") == "All",
                               field_validation=q.get("fieldValidation") or "Warn",
                               field_manager=manager, user=request.user)
        if options.field_validation not in ("Strict", "Warn", "Ignore"):
            raise bad_request(f"fieldValidation must be one of Strict, Warn, Ignore (got "
                              f"{options.field_validation!r})")
        if method in ("GET", "HEAD") and not route.name:
            self._require_verb(route, "watch" if _truthy(q.get("watch")) else "list")
            listoptions.validate(q, _truthy(q.get("watch")))
            if _truthy(q.get("watch")):
                self._watch(request, route)
            else:
                listing = self.api.list_collection(
                    rt, route.namespace, q.get("labelSelector"), q.get("fieldSelector"),
                    int(q.get("limit") or 0), q.get("continue") or None)
                self._reply_objects(request, route, listing["items"], listing["metadata"],
                                    listing)
        elif method in ("GET", "HEAD"):
            obj = self.api.get(rt, route.namespace, route.name)
            self._reply_objects(request, route, [obj], {"resourceVersion": obj["metadata"].get(
                "resourceVersion", "")}, obj)
        elif method == "POST" and route.subresource == "binding":
            self._bind(request, route, options)
        elif method == "POST" and not route.name and (route.namespace or not rt.namespaced):
            self._require_verb(route, "create")
            self._reply(request, self.api.create(rt, route.namespace, request.json_body(),
                                                 options))
        elif method == "PUT" and route.name:
            self._require_verb(route, "update")
            self._reply(request, self.api.update(rt, route.namespace, route.name,
                                                 request.json_body(), options,
                                                 route.subresource))
        elif method == "PATCH" and route.name and route.subresource in ("", "status"):
            self._require_verb(route, "patch")
            self._reply(request, self.api.patch(rt, route.namespace, route.name, request.body,
                                                request.content_type, options,
                                                route.subresource))
        elif method == "DELETE" and route.name and not route.subresource:
            self._require_verb(route, "delete")
            self._reply(request, self.api.delete(rt, route.namespace, route.name,
                                                 self._delete_options(request), options))
        elif method == "DELETE" and not route.name:
            self._require_verb(route, "deletecollection")
            listing = self.api.delete_collection(
                rt, route.namespace, q.get("labelSelector"), q.get("fieldSelector"),
                self._delete_options(request), options)
            request.reply(200, listing)
        else:
            raise method_not_allowed(NOT_ALLOWED)

    def _exec(self, request: Request, route: Route) -> None:
        """``pods/NAME/exec`` over a WebSocket (see ``exec_session``)."""
        if request.method not in ("GET", "POST"):
            raise method_not_allowed(NOT_ALLOWED)
        pod = self.api.get(route.rt, route.namespace, route.name)
        headers = request.headers
        if (headers.get("Upgrade") or "").lower() != "websocket":
            raise bad_request("Upgrade request required: pods/exec is served over a WebSocket "
                              "(v5.channel.k8s.io); SPDY is not supported by this server")
        protocol = websocket.choose_protocol(headers.get("Sec-WebSocket-Protocol") or "",
                                             exec_session.PROTOCOLS)
        if protocol is None:
            raise bad_request("no supported WebSocket subprotocol (supported: "
                              f"{', '.join(exec_session.PROTOCOLS)})")
        netns = self._pod_netns(pod)
        query = parse_qs(urlsplit(request.handler.path).query)
        command = query.get("command") or []
        if not command:
            raise bad_request("you must specify at least 1 command")
        handler = request.handler
        handler.send_response(101)
        handler.send_header("Upgrade", "websocket")
        handler.send_header("Connection", "Upgrade")
        handler.send_header("Sec-WebSocket-Accept",
                            websocket.accept_key(headers.get("Sec-WebSocket-Key") or ""))
        handler.send_header("Sec-WebSocket-Protocol", protocol)
        handler.end_headers()
        handler.wfile.flush()
        handler.close_connection = True
        session = exec_session.ExecSession(
            websocket.WebSocket(handler.rfile, handler.wfile), netns, command,
            stdin=_truthy((query.get("stdin") or [""])[0]),
            tty=_truthy((query.get("tty") or [""])[0]))
        session.run()

    def _pod_netns(self, pod: JSON) -> str:
        meta = pod["metadata"]
        template = self.options.pod_netns_template
        if not template:
            raise bad_request(f"pod {meta['namespace']}/{meta['name']}: exec is not available "
                              "here; this API server runs no pods (ovnk local without its "
                              "real dataplane)")
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            raise bad_request(f"pod {meta['name']} does not have a host assigned")
        if (pod.get("spec") or {}).get("hostNetwork"):
            if not self.options.node_netns_template:
                raise bad_request(f"pod {meta['namespace']}/{meta['name']}: exec into a "
                                  "hostNetwork pod is not available here")
            netns = self.options.node_netns_template.format(node=node)
        else:
            netns = template.format(node=node, namespace=meta["namespace"], name=meta["name"])
        if not (NETNS_DIR / netns).exists():
            raise bad_request(f"container not found (pod {meta['namespace']}/{meta['name']} "
                              f"has no network namespace {netns} yet; is it Running?)")
        return netns

    @staticmethod
    def _require_verb(route: Route, verb: str) -> None:
        if verb not in route.rt.verbs:
            raise method_not_allowed(NOT_ALLOWED)

    @staticmethod
    def _delete_options(request: Request) -> JSON:
        body = request.json_body("DeleteOptions") or {}
        if not isinstance(body, dict):
            raise bad_request("DeleteOptions must be a JSON object")
        for key in ("propagationPolicy", "gracePeriodSeconds", "orphanDependents"):
            if key in request.query and key not in body:
                value: Any = request.query[key]
                body[key] = value if key == "propagationPolicy" else value == "true"
        return body

    @staticmethod
    def _reply(request: Request, result: Result) -> None:
        request.warnings.extend(result.warnings)
        request.reply(result.code, result.obj)

    @staticmethod
    def _reply_objects(request: Request, route: Route, objects: list[JSON], list_meta: JSON,
                       plain: JSON) -> None:
        if request.output.table:
            include = request.query.get("includeObject") or "Metadata"
            request.reply(200, to_table(route.rt, objects, list_meta, include))
        else:
            request.reply(200, plain)

    def _watch(self, request: Request, route: Route) -> None:
        q = request.query
        start = listoptions.watch_start(q, self.store.resource_version)
        timeout = float(q.get("timeoutSeconds") or self.options.default_watch_timeout)
        watch = WatchRequest(
            route.rt, route.namespace, start.since, matcher(q.get("labelSelector"),
                                                            q.get("fieldSelector")),
            listoptions.go_bool(q.get("allowWatchBookmarks")), timeout,
            self.options.bookmark_interval, request.output.table,
            q.get("includeObject") or "Metadata", request.output.protobuf,
            start.initial, start.initial_end)
        request.start_stream()
        stream(self.store, watch, request.send_event, request.client_alive)
        request.end_stream()

    def _bind(self, request: Request, route: Route, options: WriteOptions) -> None:
        body = request.json_body() or {}
        node = str((body.get("target") or {}).get("name") or "")
        if not node:
            raise bad_request("binding target name is required")
        pod = self.api.get(route.rt, route.namespace, route.name)
        current = (pod.get("spec") or {}).get("nodeName")
        if current:
            raise conflict("", "pods", route.name, f"pod {route.name} is already assigned to "
                           f'node "{current}"')
        self.api.patch(route.rt, route.namespace, route.name,
                       json.dumps({"spec": {"nodeName": node}}).encode(),
                       "application/merge-patch+json", options)
        request.reply(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Success", "code": 201})


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


class ServerHandle:
    """A running server: ``port``, ``url``, state for tests, ``stop()``."""

    def __init__(self, app: ApiServer, http: ApiHTTPServer, thread: threading.Thread,
                 persistence: Persistence | None) -> None:
        self.app = app
        self.http = http
        self.thread = thread
        self.persistence = persistence
        self._stopped = False
        host = http.server_address[0]
        self.host = host.decode() if isinstance(host, bytes | bytearray) else str(host)
        self.port = int(http.server_address[1])
        self.url = (f"https://[{self.host}]:{self.port}" if ":" in self.host
                    else f"https://{self.host}:{self.port}")

    @property
    def store(self) -> Store:
        return self.app.store

    @property
    def registry(self) -> ResourceRegistry:
        return self.app.registry

    @property
    def admission(self) -> AdmissionRegistry:
        return self.app.admission

    @property
    def api(self) -> Api:
        return self.app.api

    @property
    def security(self) -> Security:
        return self.app.security

    def kubeconfig(self, user: str = ADMIN_USER, groups: tuple[str, ...] = (MASTERS,)) -> JSON:
        """A kubeconfig for this server authenticating as ``user`` (default: the admin)."""
        return self.security.client_kubeconfig(self.url, user, groups)

    def write_kubeconfig(self, path: Path | str, user: str = ADMIN_USER,
                         groups: tuple[str, ...] = (MASTERS,)) -> Path:
        """Write a kubeconfig for this server to ``path`` (0600; default: the admin's)."""
        return write_kubeconfig(path, self.kubeconfig(user, groups))

    def stop(self) -> None:
        """Stop serving, end every watch and connection, write the snapshot (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        self.http.shutdown()
        self.app.aggregator.stop()
        self.app.service_accounts.stop()
        self.store.close_all_watchers()
        self.http.close_connections()
        self.http.server_close()
        self.thread.join(timeout=10)
        if self.persistence is not None:
            self.persistence.stop()
        log.info("API server on %s stopped", self.url)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def serve(host: str = "127.0.0.1", port: int = 0, data_file: Path | str | None = None,
          options: ServerOptions | None = None) -> ServerHandle:
    """Start a server on a background thread; ``port=0`` picks a free port.

    :raises ValueError: no security options, or a non-loopback ``host`` without
        ``allow_non_loopback``.
    """
    options = options or ServerOptions()
    if not is_loopback(host) and not options.allow_non_loopback:
        raise ValueError(f"refusing to serve on {host}: not a loopback address (allow it "
                         "explicitly; TLS and authentication stay on)")
    app = ApiServer(options)
    load_plugins(app.admission, options.admission_modules, options.admission_entry_points)
    persistence = None
    if data_file is not None:
        path = Path(data_file)
        app.bootstrap(read_snapshot(path))
        persistence = Persistence(app.store, path, options.persist_interval)
        persistence.start()
        persistence.flush()
    else:
        app.bootstrap(None)
    app.aggregator.start()
    app.service_accounts.start()
    http = ApiHTTPServer((host, port), app, app.security.ssl_context())
    thread = threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.05},
                              name=f"apiserver-{http.server_address[1]}", daemon=True)
    thread.start()
    handle = ServerHandle(app, http, thread, persistence)
    log.info("API server listening on %s (data: %s)", handle.url, data_file or "in memory")
    return handle


__all__ = ["ApiServer", "ApiStatusError", "SecurityOptions", "ServerHandle", "ServerOptions",
           "serve", "with_security"]


def with_security(options: ServerOptions, security: SecurityOptions) -> ServerOptions:
    """``options`` with ``security`` filled in when it has none."""
    if options.security is not None:
        return options
    return dataclasses.replace(options, security=security)
