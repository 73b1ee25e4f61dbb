"""``admissionregistration.k8s.io/v1`` ValidatingWebhookConfiguration: defaults and validation.

What kube-apiserver's ``SetDefaults_ValidatingWebhook`` and
``ValidateValidatingWebhookConfiguration`` do to a configuration, in their words, so that a
configuration this server accepts is one a real cluster accepts and means the same:
``failurePolicy: Fail``, ``matchPolicy: Equivalent``, empty ``namespaceSelector`` and
``objectSelector`` (match everything), ``timeoutSeconds: 10``, each rule's ``scope: "*"``
and a service reference's ``port: 443`` when not given; names that are unique domains of
three segments at least, ``sideEffects`` ``None``/``NoneOnDryRun``, a supported
``admissionReviewVersions`` entry, exactly one of ``url`` or ``service`` (``https``, no
user, query or fragment), a timeout between 1 and 30 seconds, known policies, operations
and scopes, valid selectors.  Calling the webhooks is ``webhook_calls``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ovnk_core.kube.names import name_errors
from ovnk_core.kube.selectors import selector_problem
from ovnk_local.apiserver.errors import JSON, OMIT, FieldError

GROUP = "admissionregistration.k8s.io"
KIND = "ValidatingWebhookConfiguration"
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
SIDE_EFFECTS = ("None", "NoneOnDryRun")
REVIEW_VERSIONS = ("v1", "v1beta1")
OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
SCOPES = ("*", "Cluster", "Namespaced")
DEFAULT_TIMEOUT = 10


def default_configuration(obj: JSON) -> None:
    """``SetDefaults_ValidatingWebhook`` on every webhook, in place."""
    for hook in obj.get("webhooks") or []:
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", DEFAULT_TIMEOUT)
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")
        service = (hook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)


def validate_configuration(obj: JSON, _old: JSON | None) -> list[FieldError]:
    """``ValidateValidatingWebhookConfiguration`` (v1)."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, hook in enumerate(obj.get("webhooks") or []):
        path = f"webhooks[{index}]"
        name = str(hook.get("name") or "")
        if name in seen:
            errors.append(FieldError("Duplicate", f"{path}.name", name))
        seen.add(name)
        errors += _hook_errors(hook, path)
    return errors


def _hook_errors(hook: JSON, path: str) -> list[FieldError]:
    name = str(hook.get("name") or "")
    errors = [FieldError("Invalid", f"{path}.name", name, problem)
              for problem in name_errors(name, "subdomain")]
    if len(name.split(".")) < 3:
        errors.append(FieldError("Invalid", f"{path}.name", name,
                                 "should be a domain with at least three segments separated "
                                 "by dots"))
    for index, rule in enumerate(hook.get("rules") or []):
        errors += _rule_errors(rule, f"{path}.rules[{index}]")
    errors += _enum(hook, "failurePolicy", FAILURE_POLICIES, path)
    errors += _enum(hook, "matchPolicy", MATCH_POLICIES, path)
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        errors.append(FieldError("Required", f"{path}.sideEffects", OMIT,
                                 f"must specify one of {', '.join(SIDE_EFFECTS)}"))
    else:
        errors += _enum(hook, "sideEffects", SIDE_EFFECTS, path)
    versions = hook.get("admissionReviewVersions") or []
    if not versions:
        errors.append(FieldError("Required", f"{path}.admissionReviewVersions", OMIT,
                                 f"must specify one of {', '.join(REVIEW_VERSIONS)}"))
    elif not any(version in REVIEW_VERSIONS for version in versions):
        errors.append(FieldError("Invalid", f"{path}.admissionReviewVersions", versions,
                                 f"must include at least one of "
                                 f"{', '.join(REVIEW_VERSIONS)}"))
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and not 1 <= int(timeout) <= 30:
        errors.append(FieldError("Invalid", f"{path}.timeoutSeconds", timeout,
                                 "the timeout value must be between 1 and 30 seconds"))
    for selector in ("namespaceSelector", "objectSelector"):
        problem = selector_problem(hook.get(selector))
        if problem:
            errors.append(FieldError("Invalid", f"{path}.{selector}", hook.get(selector),
                                     problem))
    return errors + _client_config_errors(hook.get("clientConfig") or {},
                                          f"{path}.clientConfig")


def _enum(hook: JSON, key: str, supported: tuple[str, ...], path: str) -> list[FieldError]:
    value = hook.get(key)
    if value is None or value in supported:
        return []
    return [FieldError("NotSupported", f"{path}.{key}", value, supported=supported)]


def _rule_errors(rule: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    operations = rule.get("operations") or []
    if not operations:
        errors.append(FieldError("Required", f"{path}.operations", OMIT))
    if len(operations) > 1 and "*" in operations:
        errors.append(FieldError("Invalid", f"{path}.operations", operations,
                                 "if '*' is present, must not specify other operations"))
    for index, operation in enumerate(operations):
        if operation not in OPERATIONS:
            errors.append(FieldError("NotSupported", f"{path}.operations[{index}]",
                                     operation, supported=OPERATIONS))
    for key in ("apiGroups", "apiVersions", "resources"):
        if not rule.get(key):
            errors.append(FieldError("Required", f"{path}.{key}", OMIT))
    resources = rule.get("resources") or []
    if len(resources) > 1 and "*/*" in resources:
        errors.append(FieldError("Invalid", f"{path}.resources", resources,
                                 "if '*/*' is present, must not specify other resources"))
    scope = rule.get("scope")
    if scope is not None and scope not in SCOPES:
        errors.append(FieldError("NotSupported", f"{path}.scope", scope, supported=SCOPES))
    return errors


def _client_config_errors(config: JSON, path: str) -> list[FieldError]:
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [FieldError("Required", path, OMIT, "exactly one of url or service is required")]
    if not isinstance(service, dict):
        return [FieldError("Invalid", f"{path}.url", url, problem)
                for problem in url_problems(str(url))]
    errors: list[FieldError] = []
    for key in ("name", "namespace"):
        if not service.get(key):
            errors.append(FieldError("Required", f"{path}.service.{key}", OMIT,
                                     f"service {key} is required"))
    port = service.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        errors.append(FieldError("Invalid", f"{path}.service.port", port,
                                 "port is not valid: must be between 1 and 65535, inclusive"))
    service_path = service.get("path")
    if service_path is not None and not str(service_path).startswith("/"):
        errors.append(FieldError("Invalid", f"{path}.service.path", service_path,
                                 "must start with a '/'"))
    return errors


def url_problems(url: str) -> list[str]:
    """``ValidateWebhookURL``'s complaints about a ``clientConfig.url``."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return [f"url must be a valid URL: {exc}"]
    problems = []
    if parts.scheme != "https":
        problems.append("'https' is the only allowed URL scheme")
    if not parts.hostname:
        problems.append("host must be specified")
    if parts.username or parts.password:
        problems.append("user information is not permitted in the URL")
    if parts.fragment or url.endswith("#"):
        problems.append("fragments are not permitted in the URL")
    if parts.query or url.endswith("?"):
        problems.append("query parameters are not permitted in the URL")
    return problems


def webhooks_of(obj: Any) -> list[JSON]:
    """The webhooks of a stored configuration (well-formed ones: it was validated)."""
    return [hook for hook in (obj.get("webhooks") or []) if isinstance(hook, dict)]


__all__ = ["GROUP", "KIND", "default_configuration", "url_problems",
           "validate_configuration", "webhooks_of"]
