"""``meta.k8s.io/v1`` Table output, which ``kubectl get`` asks for and prints as is.

Built-in kinds get the columns the real server prints (pods: READY,
STATUS, RESTARTS, AGE and, for ``-o wide``, IP and NODE; nodes, services,
namespaces, endpoints and endpoint slices, events, leases, config maps,
secrets, service accounts, deployments, daemon sets, network policies,
validating webhook configurations, CRDs); custom
resources get NAME plus their CRD's ``additionalPrinterColumns`` (or AGE
when there are none), evaluated with the JSONPath subset in
``jsonpath.py``.  Ages use apimachinery's ``HumanDuration`` format.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ovnk_local.apiserver.errors import JSON
from ovnk_local.apiserver.jsonpath import find
from ovnk_local.apiserver.objectmeta import dig, parse_rfc3339
from ovnk_local.apiserver.resources import PrinterColumn, ResourceType

Cell = Callable[[JSON], Any]
NAME_DESCRIPTION = ("Name must be unique within a namespace. Is required when creating "
                    "resources, although some resources may allow a client to request the "
                    "generation of an appropriate name automatically.")


def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``: 45s, 3m20s, 5h, 3d4h, 2y10d, ..."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def age(timestamp: Any) -> str:
    """A timestamp as the AGE column shows it."""
    when = parse_rfc3339(str(timestamp)) if timestamp else None
    if when is None:
        return "<unknown>"
    return human_duration((datetime.now(UTC) - when).total_seconds())


def _age(obj: JSON) -> str:
    return age(dig(obj, "metadata.creationTimestamp"))


def _col(name: str, kind: str = "string", priority: int = 0, fmt: str = "") -> JSON:
    return {"name": name, "type": kind, "format": fmt, "description": "", "priority": priority}


def _pod_ready(pod: JSON) -> str:
    containers = dig(pod, "spec.containers") or []
    statuses = dig(pod, "status.containerStatuses") or []
    return f"{sum(1 for s in statuses if s.get('ready'))}/{len(containers)}"


def _pod_status(pod: JSON) -> str:
    if dig(pod, "metadata.deletionTimestamp"):
        return "Terminating"
    for status in dig(pod, "status.containerStatuses") or []:
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            return str(waiting["reason"])
    return str(dig(pod, "status.reason") or dig(pod, "status.phase") or "Unknown")


def _node_status(node: JSON) -> str:
    ready = next((c for c in dig(node, "status.conditions") or [] if c.get("type") == "Ready"),
                 None)
    status = "Unknown" if ready is None else ("Ready" if ready.get("status") == "True"
                                              else "NotReady")
    return status + (",SchedulingDisabled" if dig(node, "spec.unschedulable") else "")


def _node_roles(node: JSON) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix):] for k in dig(node, "metadata.labels") or {}
                   if k.startswith(prefix))
    return ",".join(roles) or "<none>"


def _address(node: JSON, kind: str) -> str:
    found = [a.get("address") for a in dig(node, "status.addresses") or []
             if a.get("type") == kind]
    return str(found[0]) if found else "<none>"


def _service_ports(svc: JSON) -> str:
    parts = []
    for port in dig(svc, "spec.ports") or []:
        text = str(port.get("port"))
        if port.get("nodePort"):
            text += f":{port['nodePort']}"
        parts.append(f"{text}/{port.get('protocol', 'TCP')}")
    return ",".join(parts) or "<none>"


def _external_ips(svc: JSON) -> str:
    ips = list(dig(svc, "spec.externalIPs") or [])
    ips += [i.get("ip") or i.get("hostname") for i in
            dig(svc, "status.loadBalancer.ingress") or []]
    if ips:
        return ",".join(str(i) for i in ips)
    return "<pending>" if dig(svc, "spec.type") == "LoadBalancer" else "<none>"


def _selector(svc: JSON) -> str:
    selector = dig(svc, "spec.selector") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>"


def _slice_endpoints(eps: JSON) -> str:
    addresses = [a for e in eps.get("endpoints") or [] for a in e.get("addresses") or []]
    if not addresses:
        return "<unset>"
    shown = ",".join(addresses[:3])
    return shown + (f" + {len(addresses) - 3} more..." if len(addresses) > 3 else "")


def _event_object(event: JSON) -> str:
    ref = event.get("involvedObject") or event.get("regarding") or {}
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


def _event_seen(event: JSON) -> str:
    for key in ("lastTimestamp", "deprecatedLastTimestamp", "eventTime"):
        if event.get(key):
            return age(event[key])
    series = event.get("series") or {}
    return age(series.get("lastObservedTime") or dig(event, "metadata.creationTimestamp"))


def _endpoints(obj: JSON) -> str:
    """``ip:port`` of every address and port, the first three (kubectl's formatEndpoints)."""
    found = []
    for subset in obj.get("subsets") or []:
        ports = [p.get("port") for p in subset.get("ports") or []]
        for address in subset.get("addresses") or []:
            ip = str(address.get("ip"))
            found += [f"{ip}:{port}" for port in ports] if ports else [ip]
    if not found:
        return "<none>"
    shown = ",".join(found[:3])
    return shown + (f" + {len(found) - 3} more..." if len(found) > 3 else "")


def label_selector(selector: Any) -> str:
    """A LabelSelector as ``metav1.FormatLabelSelector`` prints it."""
    if not isinstance(selector, dict) or not (selector.get("matchLabels")
                                              or selector.get("matchExpressions")):
        return "<none>"
    words = {"In": "in", "NotIn": "notin"}
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for req in selector.get("matchExpressions") or []:
        key, operator = req.get("key"), req.get("operator")
        if operator in words:
            parts.append(f"{key} {words[operator]} ({','.join(sorted(req.get('values') or []))})")
        else:
            parts.append(str(key) if operator == "Exists" else f"!{key}")
    return ",".join(parts)


def _template(obj: JSON, field: str) -> str:
    return ",".join(str(c.get(field) or "") for c in
                    dig(obj, "spec.template.spec.containers") or [])


def _count(obj: JSON, path: str) -> int:
    value = dig(obj, path)
    return value if isinstance(value, int) else 0


_WORKLOAD_WIDE: list[tuple[JSON, Cell]] = [
    (_col("Containers", priority=1), lambda o: _template(o, "name")),
    (_col("Images", priority=1), lambda o: _template(o, "image")),
    (_col("Selector", priority=1), lambda o: label_selector(dig(o, "spec.selector")))]

_BUILTIN: dict[tuple[str, str], list[tuple[JSON, Cell]]] = {
    ("", "Namespace"): [(_col("Status"), lambda o: dig(o, "status.phase") or ""),
                        (_col("Age"), _age)],
    ("", "Node"): [
        (_col("Status"), _node_status), (_col("Roles"), _node_roles), (_col("Age"), _age),
        (_col("Version"), lambda o: dig(o, "status.nodeInfo.kubeletVersion") or ""),
        (_col("Internal-IP", priority=1), lambda o: _address(o, "InternalIP")),
        (_col("External-IP", priority=1), lambda o: _address(o, "ExternalIP")),
        (_col("OS-Image", priority=1), lambda o: dig(o, "status.nodeInfo.osImage") or ""),
        (_col("Kernel-Version", priority=1),
         lambda o: dig(o, "status.nodeInfo.kernelVersion") or ""),
        (_col("Container-Runtime", priority=1),
         lambda o: dig(o, "status.nodeInfo.containerRuntimeVersion") or "")],
    ("", "Pod"): [
        (_col("Ready"), _pod_ready), (_col("Status"), _pod_status),
        (_col("Restarts", "string"), lambda o: str(sum(
            int(s.get("restartCount") or 0) for s in dig(o, "status.containerStatuses") or []))),
        (_col("Age"), _age), (_col("IP", priority=1), lambda o: dig(o, "status.podIP") or
                              "<none>"),
        (_col("Node", priority=1), lambda o: dig(o, "spec.nodeName") or "<none>"),
        (_col("Nominated Node", priority=1),
         lambda o: dig(o, "status.nominatedNodeName") or "<none>"),
        (_col("Readiness Gates", priority=1), lambda o: "<none>")],
    ("", "Service"): [
        (_col("Type"), lambda o: dig(o, "spec.type") or "ClusterIP"),
        (_col("Cluster-IP"), lambda o: dig(o, "spec.clusterIP") or "<none>"),
        (_col("External-IP"), _external_ips), (_col("Port(s)"), _service_ports),
        (_col("Age"), _age), (_col("Selector", priority=1), _selector)],
    ("", "ConfigMap"): [
        (_col("Data", "integer"), lambda o: len(o.get("data") or {}) + len(
            o.get("binaryData") or {})), (_col("Age"), _age)],
    ("", "Endpoints"): [(_col("Endpoints"), _endpoints), (_col("Age"), _age)],
    ("", "Secret"): [
        (_col("Type"), lambda o: o.get("type") or ""),
        (_col("Data", "integer"), lambda o: len(o.get("data") or {})), (_col("Age"), _age)],
    ("", "ServiceAccount"): [
        (_col("Secrets", "integer"), lambda o: len(o.get("secrets") or [])),
        (_col("Age"), _age)],
    ("apps", "Deployment"): [
        (_col("Ready"), lambda o: f"{_count(o, 'status.readyReplicas')}/"
                                  f"{_count(o, 'spec.replicas')}"),
        (_col("Up-to-date", "integer"), lambda o: _count(o, "status.updatedReplicas")),
        (_col("Available", "integer"), lambda o: _count(o, "status.availableReplicas")),
        (_col("Age"), _age), *_WORKLOAD_WIDE],
    ("apps", "DaemonSet"): [
        (_col("Desired", "integer"), lambda o: _count(o, "status.desiredNumberScheduled")),
        (_col("Current", "integer"), lambda o: _count(o, "status.currentNumberScheduled")),
        (_col("Ready", "integer"), lambda o: _count(o, "status.numberReady")),
        (_col("Up-to-date", "integer"), lambda o: _count(o, "status.updatedNumberScheduled")),
        (_col("Available", "integer"), lambda o: _count(o, "status.numberAvailable")),
        (_col("Node Selector"), lambda o: ",".join(
            f"{k}={v}" for k, v in sorted((dig(o, "spec.template.spec.nodeSelector")
                                           or {}).items())) or "<none>"),
        (_col("Age"), _age), *_WORKLOAD_WIDE],
    ("networking.k8s.io", "NetworkPolicy"): [
        (_col("Pod-Selector"), lambda o: label_selector(dig(o, "spec.podSelector"))),
        (_col("Age"), _age)],
    ("discovery.k8s.io", "EndpointSlice"): [
        (_col("AddressType"), lambda o: o.get("addressType") or ""),
        (_col("Ports"), lambda o: ",".join(str(p.get("port")) for p in o.get("ports") or [])
         or "<unset>"),
        (_col("Endpoints"), _slice_endpoints), (_col("Age"), _age)],
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): [
        (_col("Webhooks", "integer"), lambda o: len(o.get("webhooks") or [])),
        (_col("Age"), _age)],
    ("coordination.k8s.io", "Lease"): [
        (_col("Holder"), lambda o: dig(o, "spec.holderIdentity") or ""), (_col("Age"), _age)],
    ("apiextensions.k8s.io", "CustomResourceDefinition"): [
        (_col("Created At", "date"), lambda o: dig(o, "metadata.creationTimestamp") or "")],
}
_EVENT_COLUMNS: list[tuple[JSON, Cell]] = [
    (_col("Last Seen"), _event_seen), (_col("Type"), lambda o: o.get("type") or ""),
    (_col("Reason"), lambda o: o.get("reason") or ""), (_col("Object"), _event_object),
    (_col("Message"), lambda o: o.get("message") or o.get("note") or "")]


def _cell(column: PrinterColumn, obj: JSON) -> Any:
    try:
        values = find(obj, column.json_path)
    except ValueError:
        return None
    if not values:
        return None
    value = values[0]
    if column.type == "date":
        return age(value) if isinstance(value, str) else None
    if column.type == "integer":
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if column.type == "number":
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if column.type == "boolean":
        return value if isinstance(value, bool) else None
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value).lower() if isinstance(value, bool) else str(value)


def columns(rt: ResourceType) -> list[tuple[JSON, Cell]]:
    """Column definitions (after NAME) with their cell functions."""
    if rt.kind == "Event" and rt.group in ("", "events.k8s.io"):
        return _EVENT_COLUMNS
    builtin = _BUILTIN.get((rt.group, rt.kind))
    if builtin is not None and not rt.custom:
        return builtin
    printer = rt.printer_columns or (
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),)
    return [({"name": c.name, "type": c.type, "format": c.format,
              "description": c.description, "priority": c.priority},
             lambda o, c=c: _cell(c, o)) for c in printer]  # type: ignore[misc]


def to_table(rt: ResourceType, objects: list[JSON], list_meta: JSON,
             include_object: str = "Metadata") -> JSON:
    """A Table with one row per object; rows carry the object as ``include_object`` asks."""
    cols = columns(rt)
    name_column = {"name": "Name", "type": "string", "format": "name",
                   "description": NAME_DESCRIPTION, "priority": 0}
    if rt.kind == "Event":
        definitions = [d for d, _ in cols]
    else:
        definitions = [name_column] + [d for d, _ in cols]
    rows = []
    for obj in objects:
        cells = [cell(obj) for _, cell in cols]
        if rt.kind != "Event":
            cells.insert(0, dig(obj, "metadata.name"))
        row: JSON = {"cells": cells}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": obj.get("metadata") or {}}
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
            "columnDefinitions": definitions, "rows": rows}
