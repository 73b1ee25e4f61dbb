"""A pod spec's defaults and required fields, wherever it sits: a Pod, a workload's template.

kube-apiserver defaults and validates the same ``PodSpec`` in a Pod and in
a Deployment's or DaemonSet's ``spec.template``; the field paths of its
messages differ only by that prefix (``spec.containers[0].image`` or
``spec.template.spec.containers[0].image``).
"""

from __future__ import annotations

from typing import Any

from ovnk_local.apiserver.errors import JSON, OMIT, FieldError

POD_DEFAULTS: tuple[tuple[str, Any], ...] = (
    ("restartPolicy", "Always"), ("dnsPolicy", "ClusterFirst"),
    ("schedulerName", "default-scheduler"), ("terminationGracePeriodSeconds", 30),
    ("securityContext", {}), ("enableServiceLinks", True), ("priority", 0),
    ("preemptionPolicy", "PreemptLowerPriority"))


def default_pod_spec(spec: Any) -> None:
    """The defaults of ``SetDefaults_PodSpec`` and its containers, in place."""
    if not isinstance(spec, dict):
        return
    for key, value in POD_DEFAULTS:
        spec.setdefault(key, value.copy() if isinstance(value, dict) else value)
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if not isinstance(container, dict):
            continue
        image = str(container.get("image") or "")
        latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
        container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("resources", {})
        for port in container.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")


def qos_class(spec: Any) -> str:
    """The QoS class of a pod with ``spec`` (BestEffort, Burstable or Guaranteed)."""
    containers = [c for c in (spec or {}).get("containers") or [] if isinstance(c, dict)]
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        (r.get("limits") or {}).get(k) and (r.get("requests") or {}).get(k, (
            r.get("limits") or {}).get(k)) == (r.get("limits") or {}).get(k)
        for r in resources for k in ("cpu", "memory"))
    return "Guaranteed" if guaranteed else "Burstable"


def pod_spec_errors(spec: Any, path: str) -> list[FieldError]:
    """Containers, each with a name and an image (``path``: where the spec sits)."""
    containers: Any = (spec or {}).get("containers") if isinstance(spec, dict) else None
    if not containers or not isinstance(containers, list):
        return [FieldError("Required", f"{path}.containers", OMIT)]
    errors: list[FieldError] = []
    for index, container in enumerate(containers):
        for field in ("name", "image"):
            if not isinstance(container, dict) or not container.get(field):
                errors.append(FieldError("Required", f"{path}.containers[{index}].{field}",
                                         OMIT))
    return errors


def pod_template(obj: JSON) -> JSON:
    """``spec.template`` of a workload (created empty when missing)."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return {}
    template = spec.setdefault("template", {})
    return template if isinstance(template, dict) else {}
