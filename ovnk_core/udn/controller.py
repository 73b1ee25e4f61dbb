"""The cluster manager's UserDefinedNetwork and ClusterUserDefinedNetwork controllers.

Each custom resource is rendered into NetworkAttachmentDefinitions (one for
a UDN, one per selected namespace for a CUDN) and its ``NetworkCreated``
condition reports the outcome with upstream's reasons and messages.  Both
controllers are level-driven: NAD, namespace and pod changes enqueue the
owning resources, and every reconcile recomputes the desired NADs from the
current objects, so a deleted or edited NAD is put back and a namespace that
starts or stops matching a CUDN gains or loses its NAD.

Deletion is guarded by finalizers on the resource and on each NAD: a NAD is
removed only when no pod's ``k8s.ovn.org/pod-networks`` references it; until
then the condition names the pods and the key is retried with a growing
delay that does not count as a failure.  A network whose topology no enabled
plugin renders into OVN keeps ``NetworkCreated=True`` (its NAD exists) and
gets a Warning event on the NAD and the resource (``udn.unrendered``).  So does
one whose topology no loaded plugin provides any more (left out of
``--topologies``, or uninstalled) while the NAD made when it was there exists:
that NAD is kept as it is (nothing can render it again); a NAD that does not
exist yet cannot be made, and the condition says why.  A network whose NADs
leave out fields a disabled feature would use is created too, with a Warning
on the resource (``udn.ignored_fields``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from ovnk_core.annotations import pod_networks
from ovnk_core.config import Config
from ovnk_core.errors import NetworkConfigError, NotReady, OvnkError, TopologyNotSupported
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.conditions import Condition, set_conditions
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.errors import AlreadyExists, Conflict, NotFound
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.informer import index_by_namespace
from ovnk_core.kube.resources import CUDNS, NADS, NAMESPACES, PODS, UDNS, object_key, split_key
from ovnk_core.kube.selectors import selector_matches, selector_problem
from ovnk_core.networks import nad_config
from ovnk_core.plugins import PluginHost
from ovnk_core.udn import nad as nadlib
from ovnk_core.udn.ignored_fields import IgnoredFieldWarnings
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL
from ovnk_core.udn.sections import UdnSections
from ovnk_core.udn.unrendered import UnrenderedWarnings

log = logging.getLogger(__name__)

NETWORK_CREATED = "NetworkCreated"


DELETING = "deleting"


def being_deleted(obj: JSON) -> list[str]:
    """Index: UDNs/CUDNs that carry a deletionTimestamp (waiting for their pods to go)."""
    return [DELETING] if obj["metadata"].get("deletionTimestamp") else []


class InUseError(OvnkError):
    """The network is still used by pods; deletion waits."""


def invalid_primary_network_message(namespace: str) -> str:
    return (f'invalid primary network state for namespace "{namespace}": a valid primary user '
            "defined network or network attachment definition custom resource, and required "
            f'namespace label "{PRIMARY_NAMESPACE_LABEL}" must both be present')


def index_by_owner_uid(obj: JSON) -> list[str]:
    return [ref["uid"] for ref in obj.get("metadata", {}).get("ownerReferences") or []
            if ref.get("controller") and ref.get("uid")]


def pods_using(pods: list[JSON], nad_key: str) -> list[str]:
    """Keys of pods whose pod-networks annotation has an entry for ``nad_key``.

    :raises InUseError: an annotation cannot be parsed (the check cannot be trusted).
    """
    users = []
    for pod in pods:
        raw = (pod["metadata"].get("annotations") or {}).get(
            pod_networks.POD_NETWORKS_ANNOTATION)
        try:
            networks = pod_networks.entries(raw)  # only which networks: the keys
        except pod_networks.PodAnnotationError as exc:
            raise InUseError(f"failed to parse pod {object_key(pod)} annotation: {exc}") \
                from None
        if nad_key in networks:
            users.append(object_key(pod))
    return sorted(users)


def delete_failed_message(nad_key: str, error: Exception) -> str:
    """Upstream's wording when a UDN/CUDN's NAD cannot be deleted (its condition message)."""
    return f"failed to delete NetworkAttachmentDefinition [{nad_key}]: {error}"


@dataclass(frozen=True)
class NadOutcome:
    namespace: str
    error: str = ""
    deleting: bool = False


class UdnControllers:
    """Both controllers, sharing informers, the client and the NAD logic."""

    def __init__(self, client: KubeClient, informers: InformerFactory, config: Config,
                 host: PluginHost, recorder: EventRecorder) -> None:
        self.client = client
        self.config = config
        self.host = host
        self.sections = UdnSections.of(host.topologies.values())  # what UDNs may name
        self.recorder = recorder
        self.unrendered = UnrenderedWarnings(host, recorder)
        self.ignored = IgnoredFieldWarnings(self.sections, config, recorder)
        self.udns = informers.get(UDNS, indexers={DELETING: being_deleted})
        self.cudns = informers.get(CUDNS, indexers={DELETING: being_deleted})
        self.namespaces = informers.get(NAMESPACES)
        self.pods = informers.get(PODS, indexers={"namespace": index_by_namespace})
        self.nads = informers.get(NADS, indexers={"namespace": index_by_namespace,
                                                  "owner": index_by_owner_uid})
        self.udn_controller = Controller("user-defined-network-controller", self.reconcile_udn,
                                         initial_sync=self.remove_stale_nads,
                                         on_error=self._report_udn_error)
        self.cudn_controller = Controller("cluster-user-defined-network-controller",
                                          self.reconcile_cudn, on_error=self._report_cudn_error)
        self.udn_controller.watch(self.udns, primary=True)
        self.udn_controller.watch(self.nads, key_func=self._owner_udn_keys)
        self.udn_controller.watch(self.namespaces, key_func=self._udns_in_namespace)
        self.cudn_controller.watch(self.cudns, primary=True)
        self.cudn_controller.watch(self.nads, key_func=self._owner_cudn_keys)
        self.cudn_controller.watch(self.namespaces, key_func=lambda _ns: self.cudns.list_keys())
        for controller in (self.udn_controller, self.cudn_controller):
            controller.watch(self.pods, key_func=self._deleting_owners_of_pod(controller))

    # -- errors that escaped a reconcile (API failures): status + event -------------------------
    def _report_udn_error(self, key: str, error: BaseException, kind: str) -> None:
        self._report_error(UDNS, self.udns.get(key), error, kind, "SyncError")

    def _report_cudn_error(self, key: str, error: BaseException, kind: str) -> None:
        self._report_error(CUDNS, self.cudns.get(key), error, kind,
                           "NetworkAttachmentDefinitionSyncError")

    def _report_error(self, resource: Any, obj: JSON | None, error: BaseException, kind: str,
                      reason: str) -> None:
        if obj is None:
            return
        message = str(error)
        if kind == "slow-lane":
            message += (f" (failed {self.udn_controller.max_failures} times; retrying every "
                        f"{self.udn_controller.slow_lane_period:.0f}s)")
        self.recorder.event(obj, WARNING, reason, message)
        try:
            set_conditions(self.client, resource, obj,
                           [Condition(NETWORK_CREATED, "False", reason, message)])
        except OvnkError as exc:
            log.warning("%s: cannot report %s: %s", object_key(obj), message, exc)

    # -- event → key mapping -----------------------------------------------------------------
    @staticmethod
    def _controller_ref(nad: JSON, kind: str) -> JSON | None:
        for ref in nad.get("metadata", {}).get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == kind:
                return dict(ref)
        return None

    def _owner_udn_keys(self, nad: JSON) -> list[str]:
        ref = self._controller_ref(nad, nadlib.UDN_KIND)
        return [f"{nad['metadata']['namespace']}/{ref['name']}"] if ref else []

    def _owner_cudn_keys(self, nad: JSON) -> list[str]:
        ref = self._controller_ref(nad, nadlib.CUDN_KIND)
        return [str(ref["name"])] if ref else []

    def _udns_in_namespace(self, namespace: JSON) -> list[str]:
        name = namespace["metadata"]["name"]
        return [key for key in self.udns.list_keys() if key.startswith(f"{name}/")]

    def _deleting_owners_of_pod(self, controller: Controller) -> Any:
        """A pod going away may unblock the deletion of a network it used: the keys of the
        UDNs/CUDNs being deleted (an index: no scan, no copies; usually none at all)."""
        informer = self.udns if controller is self.udn_controller else self.cudns

        def keys(_pod: JSON) -> list[str]:
            return informer.keys_by_index(DELETING, DELETING)
        return keys

    # -- shared NAD logic ------------------------------------------------------------------
    def ensure_nad(self, obj: JSON, namespace: str) -> NadOutcome:
        """Create or update the NAD of ``obj`` in ``namespace``; the outcome for the status."""
        name = obj["metadata"]["name"]
        try:
            if nadlib.is_primary(obj, self.sections):
                ns = self.namespaces.get(namespace)
                labels = (ns or {}).get("metadata", {}).get("labels") or {}
                if PRIMARY_NAMESPACE_LABEL not in labels:
                    raise NetworkConfigError(invalid_primary_network_message(namespace))
            desired = nadlib.build_nad(obj, namespace, self.config, self.sections)
            topology = str(self.host.parse_netconf(desired["spec"]["config"]).topology)
        except TopologyNotSupported as exc:
            return self._without_topology_plugin(obj, namespace, exc)
        except NetworkConfigError as exc:
            return NadOutcome(namespace, str(exc))
        existing = self.nads.get(f"{namespace}/{name}")
        if existing is None:
            if nadlib.is_primary(obj, self.sections):
                other = self._other_primary_nad(namespace, name)
                if other:
                    return NadOutcome(namespace, f'primary network already exist in namespace '
                                                 f'"{namespace}": "{other}"')
            try:
                created = self.client.create(NADS, desired, namespace=namespace)
            except AlreadyExists:
                raise NotReady(f"NAD {namespace}/{name} appeared meanwhile") from None
            except NotFound:
                return NadOutcome(namespace, f'namespaces "{namespace}" not found')
            log.info("created NAD %s/%s for %s", namespace, name, nadlib.network_name_of(obj))
            self.unrendered.check(obj, created, nadlib.network_name_of(obj), topology)
            return NadOutcome(namespace)
        if not nadlib.is_controlled_by(existing, obj):
            return NadOutcome(namespace, "foreign NetworkAttachmentDefinition with the desired "
                                         f"name already exist [{namespace}/{name}]")
        if existing["metadata"].get("deletionTimestamp"):
            return NadOutcome(namespace, deleting=True)
        if nadlib.nad_needs_update(existing, desired):
            try:
                self.client.update(NADS, nadlib.merge_for_update(existing, desired))
            except Conflict:
                raise NotReady(f"NAD {namespace}/{name} changed meanwhile", delay=0.1) from None
            log.info("updated NAD %s/%s back to its rendered state", namespace, name)
        self.unrendered.check(obj, existing, nadlib.network_name_of(obj), topology)
        return NadOutcome(namespace)

    def _without_topology_plugin(self, obj: JSON, namespace: str,
                                 exc: TopologyNotSupported) -> NadOutcome:
        """The outcome for ``obj`` in ``namespace`` when no loaded plugin provides its
        topology: its existing NAD stays as it is, with the reason it is not rendered;
        without one, the error (no NAD can be made)."""
        name = obj["metadata"]["name"]
        existing = self.nads.get(f"{namespace}/{name}")
        if existing is None or not nadlib.is_controlled_by(existing, obj):
            return NadOutcome(namespace, str(exc))
        if existing["metadata"].get("deletionTimestamp"):
            return NadOutcome(namespace, deleting=True)
        config = nad_config.ovn_config_of(existing) or {}
        topology = config.get("topology")
        self.unrendered.check(obj, existing, nadlib.network_name_of(obj),
                              topology if isinstance(topology, str) else exc.topology.lower())
        return NadOutcome(namespace)

    def _other_primary_nad(self, namespace: str, name: str) -> str | None:
        for nad in self.nads.peek_by_index("namespace", namespace):  # read only
            if nad["metadata"]["name"] == name:
                continue
            cni = nad_config.ovn_config_of(nad)
            if cni is not None and cni.get("role") == "primary":
                return str(nad["metadata"]["name"])
        return None

    def delete_nad(self, nad: JSON, owner: JSON) -> None:
        """Remove our finalizer and delete the NAD once no pod uses it.

        :raises InUseError: pods still reference it (the message lists them).
        """
        meta = nad["metadata"]
        if not nadlib.is_controlled_by(nad, owner):
            return
        key = f"{meta['namespace']}/{meta['name']}"
        users = pods_using(self.pods.peek_by_index("namespace", meta["namespace"]), key)
        if users:
            raise InUseError(f"network in use by the following pods: [{' '.join(users)}]")
        if nadlib.FINALIZER in (meta.get("finalizers") or []):
            updated = json.loads(json.dumps(nad))
            updated["metadata"]["finalizers"] = [f for f in meta["finalizers"]
                                                 if f != nadlib.FINALIZER]
            try:
                self.client.update(NADS, updated)
            except NotFound:
                return
            except Conflict:
                raise NotReady(f"NAD {key} changed meanwhile", delay=0.1) from None
        self.client.delete_if_exists(NADS, meta["name"], meta["namespace"])
        self.unrendered.forget(key)
        log.info("deleted NAD %s", key)

    def _set_finalizer(self, resource: Any, obj: JSON, present: bool) -> JSON | None:
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if (nadlib.FINALIZER in finalizers) == present:
            return obj
        finalizers = [*finalizers, nadlib.FINALIZER] if present else \
            [f for f in finalizers if f != nadlib.FINALIZER]
        patch = {"metadata": {"finalizers": finalizers,
                              "resourceVersion": meta.get("resourceVersion")}}
        try:
            result: JSON = self.client.patch(resource, meta["name"], patch, meta.get("namespace"))
            return result
        except NotFound:
            return None
        except Conflict:
            raise NotReady(f"{object_key(obj)} changed meanwhile", delay=0.1) from None

    def _condition(self, resource: Any, obj: JSON, condition: Condition) -> None:
        try:
            set_conditions(self.client, resource, obj, [condition])
        except NotFound:
            return
        except Conflict:
            raise NotReady(f"{object_key(obj)} changed meanwhile", delay=0.1) from None

    # -- UDN -------------------------------------------------------------------------------
    def reconcile_udn(self, key: str) -> None:
        udn = self.udns.get(key)
        if udn is None:
            self.ignored.forget(key)
            return
        namespace, name = split_key(key)
        assert namespace is not None
        if udn["metadata"].get("deletionTimestamp"):
            self._delete_udn(udn, namespace, name)
            return
        udn = self._set_finalizer(UDNS, udn, True)
        if udn is None:
            return
        outcome = self.ensure_nad(udn, namespace)
        if outcome.error:
            condition = Condition(NETWORK_CREATED, "False", "SyncError", outcome.error)
            self.recorder.event(udn, WARNING, "SyncError", outcome.error)
        elif outcome.deleting:
            condition = Condition(NETWORK_CREATED, "False", "NetworkAttachmentDefinitionDeleted",
                                  "NetworkAttachmentDefinition is being deleted")
        else:
            condition = Condition(NETWORK_CREATED, "True", "NetworkAttachmentDefinitionCreated",
                                  "NetworkAttachmentDefinition has been created")
            self.ignored.check(udn)
        self._condition(UDNS, udn, condition)

    def _delete_udn(self, udn: JSON, namespace: str, name: str) -> None:
        if nadlib.FINALIZER not in (udn["metadata"].get("finalizers") or []):
            return
        nad = self.nads.get(f"{namespace}/{name}")
        if nad is not None:
            try:
                self.delete_nad(nad, udn)
            except InUseError as exc:
                message = delete_failed_message(f"{namespace}/{name}", exc)
                self._condition(UDNS, udn, Condition(NETWORK_CREATED, "False", "SyncError",
                                                     message))
                raise NotReady(message, backoff=True) from None
        self._set_finalizer(UDNS, udn, False)

    # -- CUDN ------------------------------------------------------------------------------
    def selected_namespaces(self, cudn: JSON) -> list[str]:
        """:raises ValueError: the selector is malformed (upstream's message)."""
        selector = (cudn.get("spec") or {}).get("namespaceSelector") or {}
        problem = selector_problem(selector)
        if problem:
            raise ValueError(f"failed to create label-selector: {problem}")
        names = []
        for name in self.namespaces.list_keys():
            namespace = self.namespaces.peek(name)  # read only: no copy of every namespace
            if namespace is None:
                continue
            meta = namespace["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            if selector_matches(selector, meta.get("labels") or {}):
                names.append(meta["name"])
        return sorted(names)

    def reconcile_cudn(self, key: str) -> None:
        cudn = self.cudns.get(key)
        if cudn is None:
            self.ignored.forget(key)
            return
        owned = {nad["metadata"]["namespace"]: nad
                 for nad in self.nads.by_index("owner", cudn["metadata"].get("uid", ""))}
        if cudn["metadata"].get("deletionTimestamp"):
            self._delete_cudn(cudn, owned)
            return
        cudn = self._set_finalizer(CUDNS, cudn, True)
        if cudn is None:
            return
        try:
            selected = self.selected_namespaces(cudn)
        except ValueError as exc:  # its NADs stay as they are until the selector is fixed
            self.recorder.event(cudn, WARNING, "NetworkAttachmentDefinitionSyncError", str(exc))
            self._condition(CUDNS, cudn, Condition(
                NETWORK_CREATED, "False", "NetworkAttachmentDefinitionSyncError", str(exc)))
            return
        errors: list[str] = []
        for namespace, nad in sorted(owned.items()):
            if namespace not in selected:
                try:
                    self.delete_nad(nad, cudn)
                except InUseError as exc:
                    errors.append(delete_failed_message(
                        f"{namespace}/{nad['metadata']['name']}", exc))
        created, deleting = [], []
        for namespace in selected:
            outcome = self.ensure_nad(cudn, namespace)
            if outcome.error:
                errors.append(outcome.error)
            else:
                created.append(namespace)
                if outcome.deleting:
                    deleting.append(f"{namespace}/{cudn['metadata']['name']}")
        if errors:
            message = "\n".join(errors)
            self.recorder.event(cudn, WARNING, "NetworkAttachmentDefinitionSyncError", message)
            condition = Condition(NETWORK_CREATED, "False",
                                  "NetworkAttachmentDefinitionSyncError", message)
        elif deleting:
            condition = Condition(NETWORK_CREATED, "False", "NetworkAttachmentDefinitionDeleted",
                                  "NetworkAttachmentDefinition are being deleted: "
                                  f"[{' '.join(deleting)}]")
        else:
            condition = Condition(NETWORK_CREATED, "True", "NetworkAttachmentDefinitionCreated",
                                  "NetworkAttachmentDefinition has been created in following "
                                  f"namespaces: [{', '.join(created)}]")
            self.ignored.check(cudn)
        self._condition(CUDNS, cudn, condition)

    def _delete_cudn(self, cudn: JSON, owned: dict[str, JSON]) -> None:
        if nadlib.FINALIZER not in (cudn["metadata"].get("finalizers") or []):
            return
        blocked = []
        for namespace, nad in sorted(owned.items()):
            try:
                self.delete_nad(nad, cudn)
            except InUseError as exc:
                blocked.append(delete_failed_message(f"{namespace}/{nad['metadata']['name']}",
                                                     exc))
        if blocked:
            message = "\n".join(blocked)
            self._condition(CUDNS, cudn, Condition(
                NETWORK_CREATED, "False", "NetworkAttachmentDefinitionSyncError", message))
            raise NotReady(message, backoff=True)
        self._set_finalizer(CUDNS, cudn, False)

    # -- startup ---------------------------------------------------------------------------
    def remove_stale_nads(self) -> None:
        """Delete NADs whose owning UDN/CUDN no longer exists (found by owner uid)."""
        live = {obj["metadata"].get("uid") for obj in self.udns.peek_all() + self.cudns.peek_all()}
        for nad in self.nads.peek_all():
            meta = nad["metadata"]
            if nadlib.NAD_LABEL not in (meta.get("labels") or {}):
                continue
            refs = [ref for ref in meta.get("ownerReferences") or []
                    if ref.get("controller") and ref.get("kind") in (nadlib.UDN_KIND,
                                                                     nadlib.CUDN_KIND)]
            if not refs or refs[0].get("uid") in live:
                continue
            ghost = {"metadata": {"uid": refs[0].get("uid"), "name": refs[0].get("name")}}
            try:
                self.delete_nad(nad, ghost)
            except (InUseError, NotReady) as exc:
                log.warning("stale NAD %s/%s kept: %s", meta["namespace"], meta["name"], exc)

    def start(self) -> None:
        self.udn_controller.start()
        self.cudn_controller.start()

    def stop(self) -> None:
        self.udn_controller.stop()
        self.cudn_controller.stop()
