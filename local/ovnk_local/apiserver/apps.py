"""Deployments and DaemonSets (``apps/v1``): their defaults and the checks kube-apiserver makes.

They are stored and served so that clients and controllers that read them
work; nothing here runs them (there is no deployment or daemon-set
controller, their ``status`` stays as written).  The defaults are
``SetDefaults_Deployment``/``SetDefaults_DaemonSet`` (and the pod template's
``SetDefaults_PodSpec``); the checks are the ones every such object meets:
a non-empty selector that matches the template's labels, a pod template
with containers, ``restartPolicy: Always``, the strategy's type, a
non-negative replica count and a selector that never changes.
"""

from __future__ import annotations

from typing import Any

from ovnk_core.kube.selectors import selector_matches, selector_problem
from ovnk_local.apiserver.errors import JSON, OMIT, FieldError
from ovnk_local.apiserver.podspec import default_pod_spec, pod_spec_errors, pod_template

DEPLOYMENT_STRATEGIES = ("Recreate", "RollingUpdate")
DAEMONSET_STRATEGIES = ("OnDelete", "RollingUpdate")


def default_deployment(obj: JSON) -> None:
    """``SetDefaults_Deployment``, in place."""
    template = pod_template(obj)
    spec = obj["spec"]
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("maxUnavailable", "25%")
                rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    default_pod_spec(template.setdefault("spec", {}))


def default_daemonset(obj: JSON) -> None:
    """``SetDefaults_DaemonSet``, in place."""
    template = pod_template(obj)
    spec = obj["spec"]
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("maxUnavailable", 1)
                rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    default_pod_spec(template.setdefault("spec", {}))


def _selector_errors(spec: JSON, kind: str) -> list[FieldError]:
    """The selector is required, valid, not empty; the template's labels match it."""
    selector = spec.get("selector")
    if selector is None:
        return [FieldError("Required", "spec.selector", OMIT)]
    errors: list[FieldError] = []
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errors.append(FieldError("Invalid", "spec.selector", selector,
                                 f"empty selector is invalid for {kind}"))
    problem = selector_problem(selector)
    if problem is not None:
        return [*errors, FieldError("Invalid", "spec.selector", selector,
                                    "invalid label selector")]
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    if not errors and not selector_matches(selector, labels):
        errors.append(FieldError("Invalid", "spec.template.metadata.labels", labels,
                                 "`selector` does not match template `labels`"))
    return errors


def _template_errors(spec: JSON) -> list[FieldError]:
    template_spec = (spec.get("template") or {}).get("spec") or {}
    errors = pod_spec_errors(template_spec, "spec.template.spec")
    policy = template_spec.get("restartPolicy")
    if policy != "Always":
        errors.append(FieldError("NotSupported", "spec.template.spec.restartPolicy", policy,
                                 supported=("Always",)))
    if template_spec.get("activeDeadlineSeconds") is not None:
        errors.append(FieldError("Forbidden", "spec.template.spec.activeDeadlineSeconds", OMIT,
                                 "activeDeadlineSeconds in ReplicaSet is not Supported"))
    return errors


def _immutable_selector(spec: JSON, old: JSON | None) -> list[FieldError]:
    if old is None:
        return []
    before = (old.get("spec") or {}).get("selector")
    if spec.get("selector") != before:
        return [FieldError("Invalid", "spec.selector", spec.get("selector"),
                           "field is immutable")]
    return []


def _strategy_errors(strategy: Any, path: str, supported: tuple[str, ...],
                     rolling_type: str = "RollingUpdate") -> list[FieldError]:
    kind = (strategy or {}).get("type")
    if kind not in supported:
        return [FieldError("NotSupported", f"{path}.type", kind, supported=supported)]
    if kind != rolling_type and (strategy or {}).get("rollingUpdate") is not None:
        return [FieldError("Forbidden", f"{path}.rollingUpdate", OMIT,
                           f"may not be specified when strategy `type` is '{kind}'")]
    return []


def validate_deployment(obj: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateDeployment``'s checks on what this server stores."""
    spec = obj.get("spec") or {}
    errors: list[FieldError] = []
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        errors.append(FieldError("Invalid", "spec.replicas", replicas,
                                 "must be greater than or equal to 0"))
    errors += _selector_errors(spec, "deployment")
    errors += _template_errors(spec)
    errors += _strategy_errors(spec.get("strategy"), "spec.strategy", DEPLOYMENT_STRATEGIES)
    return errors + _immutable_selector(spec, old)


def validate_daemonset(obj: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateDaemonSet``'s checks on what this server stores."""
    spec = obj.get("spec") or {}
    errors = _selector_errors(spec, "daemonset") + _template_errors(spec)
    errors += _strategy_errors(spec.get("updateStrategy"), "spec.updateStrategy",
                               DAEMONSET_STRATEGIES)
    return errors + _immutable_selector(spec, old)
