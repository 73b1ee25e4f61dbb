"""RBAC: Roles, ClusterRoles and their bindings decide what an authenticated user may do.

The semantics are Kubernetes' (``rbac/v1`` helpers and the RBAC authorizer):
a ClusterRoleBinding grants its ClusterRole's rules everywhere (every
namespace, cluster-scoped resources, non-resource URLs); a RoleBinding grants
its Role's or ClusterRole's rules inside its own namespace only.  Rules match
by verb, API group, resource (``pods``, ``pods/exec``, ``*/status``, ``*``),
resource name (an empty list matches every name) and non-resource URL
(``/healthz``, ``/apis/*``).  Members of ``system:masters`` are allowed
everything before RBAC is asked, as kube-apiserver's privileged-group
authorizer does.

The bindings are indexed by subject and kept current from the store's events,
so deciding one request costs what the requester's own bindings cost, not
what the cluster holds.  ``escalation_check`` refuses a Role, ClusterRole or
binding that would grant permissions its author does not hold (unless the
author may ``escalate`` / ``bind``), worded as the real server words it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ovnk_local.apiserver.authn import MASTERS, UserInfo
from ovnk_local.apiserver.authz import Attributes, Decision
from ovnk_local.apiserver.errors import JSON, OMIT, ApiStatusError, FieldError, forbidden
from ovnk_local.apiserver.store import DELETED, Event, Store

log = logging.getLogger(__name__)

GROUP = "rbac.authorization.k8s.io"
ROLES = f"{GROUP}/roles"
CLUSTER_ROLES = f"{GROUP}/clusterroles"
ROLE_BINDINGS = f"{GROUP}/rolebindings"
CLUSTER_ROLE_BINDINGS = f"{GROUP}/clusterrolebindings"
STORAGES = (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS)
SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class Rule:
    """One PolicyRule, normalised to tuples."""

    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, rule: object) -> Rule | None:
        if not isinstance(rule, dict):
            return None

        def strings(key: str) -> tuple[str, ...]:
            value = rule.get(key) or []
            return tuple(v for v in value if isinstance(v, str)) if isinstance(
                value, list) else ()

        return cls(strings("verbs"), strings("apiGroups"), strings("resources"),
                   strings("resourceNames"), strings("nonResourceURLs"))

    def as_json(self) -> JSON:
        body: JSON = {"verbs": list(self.verbs)}
        if self.non_resource_urls:
            body["nonResourceURLs"] = list(self.non_resource_urls)
        else:
            body["apiGroups"] = list(self.api_groups)
            body["resources"] = list(self.resources)
            if self.resource_names:
                body["resourceNames"] = list(self.resource_names)
        return body

    def allows(self, attrs: Attributes) -> bool:
        if not verb_matches(self.verbs, attrs.verb):
            return False
        if not attrs.resource_request:
            return non_resource_url_matches(self.non_resource_urls, attrs.path)
        return (("*" in self.api_groups or attrs.api_group in self.api_groups)
                and resource_matches(self.resources, attrs.resource_and_subresource,
                                     attrs.subresource)
                and (not self.resource_names or attrs.name in self.resource_names))

    def summary(self) -> str:
        """``{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`` (CompactString)."""
        def quoted(values: tuple[str, ...]) -> str:
            return "[" + " ".join(f'"{v}"' for v in values) + "]"

        parts = []
        if self.api_groups:
            parts.append(f"APIGroups:{quoted(self.api_groups)}")
        if self.resources:
            parts.append(f"Resources:{quoted(self.resources)}")
        if self.non_resource_urls:
            parts.append(f"NonResourceURLs:{quoted(self.non_resource_urls)}")
        if self.resource_names:
            parts.append(f"ResourceNames:{quoted(self.resource_names)}")
        parts.append(f"Verbs:{quoted(self.verbs)}")
        return "{" + ", ".join(parts) + "}"


def verb_matches(verbs: Iterable[str], verb: str) -> bool:
    return any(v == "*" or v == verb for v in verbs)


def resource_matches(resources: Iterable[str], combined: str, subresource: str) -> bool:
    """rbac/v1 ResourceMatches: ``*``, the exact ``resource[/sub]``, or ``*/sub``."""
    for resource in resources:
        if resource in ("*", combined):
            return True
        if subresource and resource == f"*/{subresource}":
            return True
    return False


def non_resource_url_matches(urls: Iterable[str], path: str) -> bool:
    for url in urls:
        if url in ("*", path):
            return True
        if url.endswith("*") and path.startswith(url[:-1]):
            return True
    return False


@dataclass(frozen=True)
class Subject:
    kind: str
    name: str
    namespace: str = ""


@dataclass(frozen=True)
class Binding:
    kind: str          # RoleBinding / ClusterRoleBinding
    name: str
    namespace: str     # "" for ClusterRoleBinding
    role_kind: str     # Role / ClusterRole
    role_name: str
    subjects: tuple[Subject, ...]

    def describe(self, subject: Subject) -> str:
        who = subject.name
        if subject.kind == "ServiceAccount":
            who = f"{subject.name}/{subject.namespace or self.namespace}"
        name = f"{self.name}/{self.namespace}" if self.namespace else self.name
        return (f'{self.kind} "{name}" of {self.role_kind} "{self.role_name}" to '
                f'{subject.kind} "{who}"')


def _subject_keys(subject: Subject, binding_namespace: str) -> tuple[str, str] | None:
    """The index key of a subject: ("User", name) or ("Group", name)."""
    if subject.kind == "User":
        return ("User", subject.name)
    if subject.kind == "Group":
        return ("Group", subject.name)
    if subject.kind == "ServiceAccount":
        namespace = subject.namespace or binding_namespace
        if not namespace:
            return None
        return ("User", f"{SA_PREFIX}{namespace}:{subject.name}")
    return None


def _binding_from(storage: str, obj: JSON) -> Binding | None:
    meta = obj.get("metadata") or {}
    ref = obj.get("roleRef") or {}
    if not isinstance(ref, dict):
        return None
    subjects = []
    for raw in obj.get("subjects") or []:
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            subjects.append(Subject(str(raw.get("kind") or ""), raw["name"],
                                    str(raw.get("namespace") or "")))
    kind = "ClusterRoleBinding" if storage == CLUSTER_ROLE_BINDINGS else "RoleBinding"
    return Binding(kind, str(meta.get("name") or ""), str(meta.get("namespace") or ""),
                   str(ref.get("kind") or ""), str(ref.get("name") or ""), tuple(subjects))


def _rules_from(obj: JSON) -> tuple[Rule, ...]:
    rules = (Rule.from_json(r) for r in obj.get("rules") or [])
    return tuple(r for r in rules if r is not None)


@dataclass
class RuleSet:
    """A user's rules in one scope, with the bindings they came from."""

    rules: list[tuple[Rule, Binding, Subject]]
    errors: list[str]


class RbacAuthorizer:
    """Decisions from the RBAC objects of ``store`` (kept indexed through store events)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._roles: dict[tuple[str, str], tuple[Rule, ...]] = {}
        self._cluster_roles: dict[str, tuple[Rule, ...]] = {}
        # subject key -> bindings naming it; namespace "" = cluster role bindings
        self._bindings: dict[str, dict[tuple[str, str], dict[tuple[str, str], Binding]]] = {}
        store.listeners.append(self._on_event)
        self.rebuild()

    # -- index -----------------------------------------------------------------------------
    def rebuild(self) -> None:
        """Index every RBAC object the store holds (after a snapshot was loaded)."""
        with self.store.lock, self._lock:
            self._roles.clear()
            self._cluster_roles.clear()
            self._bindings.clear()
            for storage in STORAGES:
                for obj in self.store.objects(storage)[0]:
                    self._add(storage, obj)

    def _on_event(self, event: Event) -> None:
        if event.storage not in STORAGES:
            return
        with self._lock:
            if event.old is not None:
                self._remove(event.storage, event.old)
            if event.type != DELETED:
                self._add(event.storage, event.obj)

    def _add(self, storage: str, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
        if storage == ROLES:
            self._roles[(namespace, name)] = _rules_from(obj)
        elif storage == CLUSTER_ROLES:
            self._cluster_roles[name] = _rules_from(obj)
        else:
            binding = _binding_from(storage, obj)
            if binding is None:
                return
            for subject in binding.subjects:
                key = _subject_keys(subject, binding.namespace)
                if key is not None:
                    per_ns = self._bindings.setdefault(binding.namespace, {})
                    per_ns.setdefault(key, {})[(binding.kind, binding.name)] = binding

    def _remove(self, storage: str, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
        if storage == ROLES:
            self._roles.pop((namespace, name), None)
        elif storage == CLUSTER_ROLES:
            self._cluster_roles.pop(name, None)
        else:
            binding = _binding_from(storage, obj)
            if binding is None:
                return
            per_ns = self._bindings.get(binding.namespace, {})
            for subject in binding.subjects:
                key = _subject_keys(subject, binding.namespace)
                if key is not None and key in per_ns:
                    per_ns[key].pop((binding.kind, binding.name), None)
                    if not per_ns[key]:
                        del per_ns[key]

    # -- rules -----------------------------------------------------------------------------
    def _role_rules(self, binding: Binding) -> tuple[Rule, ...] | None:
        if binding.role_kind == "ClusterRole":
            return self._cluster_roles.get(binding.role_name)
        if binding.role_kind == "Role" and binding.namespace:
            return self._roles.get((binding.namespace, binding.role_name))
        return None

    def role_rules(self, kind: str, name: str, namespace: str) -> tuple[Rule, ...] | None:
        """The rules of the Role (in ``namespace``) or ClusterRole named; None if missing."""
        with self._lock:
            return self._role_rules(Binding("", "", namespace, kind, name, ()))

    def _bindings_of(self, user: UserInfo, namespace: str) -> list[tuple[Binding, Subject]]:
        keys = [("User", user.name), *(("Group", g) for g in user.groups)]
        found: dict[tuple[str, str, str], tuple[Binding, Subject]] = {}
        for scope in ("", namespace) if namespace else ("",):
            per_ns = self._bindings.get(scope, {})
            for key in keys:
                for binding in (per_ns.get(key) or {}).values():
                    subject = next(s for s in binding.subjects
                                   if _subject_keys(s, binding.namespace) == key)
                    found.setdefault((binding.kind, binding.namespace, binding.name),
                                     (binding, subject))
        return [found[k] for k in sorted(found)]

    def rules_for(self, user: UserInfo, namespace: str) -> RuleSet:
        """Every rule that applies to ``user`` in ``namespace`` ("" = cluster scope only)."""
        result = RuleSet([], [])
        with self._lock:
            for binding, subject in self._bindings_of(user, namespace):
                rules = self._role_rules(binding)
                if rules is None:
                    kind = "clusterrole" if binding.role_kind == "ClusterRole" else "role"
                    result.errors.append(f'{kind}.{GROUP} "{binding.role_name}" not found')
                    continue
                result.rules.extend((rule, binding, subject) for rule in rules)
        return result

    def authorize(self, attrs: Attributes) -> Decision:
        if MASTERS in attrs.user.groups:
            return Decision(True, "")
        rules = self.rules_for(attrs.user, attrs.namespace)
        for rule, binding, subject in rules.rules:
            if rule.allows(attrs):
                return Decision(True, f"RBAC: allowed by {binding.describe(subject)}")
        reason = f"RBAC: [{', '.join(rules.errors)}]" if len(rules.errors) > 1 else (
            f"RBAC: {rules.errors[0]}" if rules.errors else "")
        return Decision(False, reason)


# -- validation -------------------------------------------------------------------------------
def validate_rbac_object(storage: str, obj: JSON, old: JSON | None) -> list[FieldError]:
    """The checks kube-apiserver's RBAC validation makes that clients run into."""
    errors: list[FieldError] = []
    namespaced = storage in (ROLES, ROLE_BINDINGS)
    if storage in (ROLES, CLUSTER_ROLES):
        rules = obj.get("rules") or []
        if not isinstance(rules, list):
            return [FieldError("Invalid", "rules", rules, "must be a list of PolicyRules")]
        for index, raw in enumerate(rules):
            path = f"rules[{index}]"
            rule = Rule.from_json(raw)
            if rule is None:
                errors.append(FieldError("Invalid", path, raw, "must be a PolicyRule"))
                continue
            if not rule.verbs:
                errors.append(FieldError("Required", f"{path}.verbs", OMIT,
                                         "verbs must contain at least one value"))
            if rule.non_resource_urls:
                if namespaced:
                    errors.append(FieldError(
                        "Invalid", f"{path}.nonResourceURLs", list(rule.non_resource_urls),
                        "namespaced rules cannot apply to non-resource URLs"))
                if rule.api_groups or rule.resources:
                    errors.append(FieldError(
                        "Invalid", f"{path}.nonResourceURLs", list(rule.non_resource_urls),
                        "rules cannot apply to both regular resources and non-resource URLs"))
            elif not rule.api_groups:
                errors.append(FieldError("Required", f"{path}.apiGroups", OMIT,
                                         "resource rules must supply at least one api group"))
            elif not rule.resources:
                errors.append(FieldError("Required", f"{path}.resources", OMIT,
                                         "resource rules must supply at least one resource"))
        return errors
    ref = obj.get("roleRef")
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if not isinstance(ref, dict):
        return [FieldError("Required", "roleRef", OMIT)]
    if ref.get("kind") not in kinds:
        errors.append(FieldError("NotSupported", "roleRef.kind", ref.get("kind") or "",
                                 supported=kinds))
    if ref.get("apiGroup") not in (None, "", GROUP):
        errors.append(FieldError("NotSupported", "roleRef.apiGroup", ref.get("apiGroup"),
                                 supported=(GROUP,)))
    if not ref.get("name"):
        errors.append(FieldError("Required", "roleRef.name", OMIT))
    if old is not None and (old.get("roleRef") or {}) != ref:
        errors.append(FieldError("Invalid", "roleRef", ref, "cannot change roleRef"))
    for index, raw in enumerate(obj.get("subjects") or []):
        path = f"subjects[{index}]"
        if not isinstance(raw, dict):
            errors.append(FieldError("Invalid", path, raw, "must be a Subject"))
            continue
        if raw.get("kind") not in ("User", "Group", "ServiceAccount"):
            errors.append(FieldError("NotSupported", f"{path}.kind", raw.get("kind") or "",
                                     supported=("ServiceAccount", "User", "Group")))
        if not raw.get("name"):
            errors.append(FieldError("Required", f"{path}.name", OMIT))
        if raw.get("kind") == "ServiceAccount" and not raw.get("namespace") and not namespaced:
            errors.append(FieldError("Required", f"{path}.namespace", OMIT))
    return errors


# -- escalation -------------------------------------------------------------------------------
def _atomic(rule: Rule) -> list[Rule]:
    """A rule broken into single-verb, single-group, single-resource, single-name rules."""
    result: list[Rule] = []
    for verb in rule.verbs:
        if rule.non_resource_urls:
            result.extend(Rule((verb,), non_resource_urls=(url,))
                          for url in rule.non_resource_urls)
            continue
        for group in rule.api_groups:
            for resource in rule.resources:
                names = rule.resource_names or ("",)
                result.extend(Rule((verb,), (group,), (resource,), (n,) if n else ())
                              for n in names)
    return result


def _resource_covers(owner: tuple[str, ...], resource: str) -> bool:
    if "*" in owner or resource in owner:
        return True
    _, _, sub = resource.partition("/")
    return bool(sub) and f"*/{sub}" in owner


def _covers(owner: Rule, sub: Rule) -> bool:
    if not ("*" in owner.verbs or set(sub.verbs) <= set(owner.verbs)):
        return False
    if sub.non_resource_urls:
        return all(non_resource_url_matches(owner.non_resource_urls, u) if not u.endswith("*")
                   else ("*" in owner.non_resource_urls or u in owner.non_resource_urls)
                   for u in sub.non_resource_urls)
    if owner.non_resource_urls and not owner.resources:
        return False
    if not ("*" in owner.api_groups or set(sub.api_groups) <= set(owner.api_groups)):
        return False
    if not all(_resource_covers(owner.resources, r) for r in sub.resources):
        return False
    if not sub.resource_names:
        return not owner.resource_names
    return not owner.resource_names or set(sub.resource_names) <= set(owner.resource_names)


def uncovered(owner: list[Rule], servant: Iterable[Rule]) -> list[Rule]:
    """The atomic parts of ``servant`` that no rule of ``owner`` covers."""
    missing = []
    for rule in servant:
        for part in _atomic(rule):
            if not any(_covers(o, part) for o in owner):
                missing.append(part)
    return missing


AuthorizeFn = Callable[[Attributes], Decision]


def escalation_check(authorizer: RbacAuthorizer, authorize: AuthorizeFn, storage: str,
                     obj: JSON, user: UserInfo) -> ApiStatusError | None:
    """None when ``user`` may write ``obj`` (a role or binding); else the 403 to send."""
    if MASTERS in user.groups:
        return None
    meta = obj.get("metadata") or {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    plural = storage.split("/", 1)[1]
    if storage in (ROLES, CLUSTER_ROLES):
        if authorize(Attributes(user, "escalate", True, GROUP, "v1", plural, "", namespace,
                                name)).allowed:
            return None
        wanted: Iterable[Rule] = _rules_from(obj)
    else:
        ref = obj.get("roleRef") or {}
        role_kind, role_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        role_plural = "clusterroles" if role_kind == "ClusterRole" else "roles"
        if authorize(Attributes(user, "bind", True, GROUP, "v1", role_plural, "", namespace,
                                role_name)).allowed:
            return None
        rules = authorizer.role_rules(role_kind, role_name, namespace)
        if rules is None:
            return forbidden(GROUP, plural, name, f'{role_kind.lower()}.{GROUP} "{role_name}" '
                             "not found")
        wanted = rules
    owner = [rule for rule, _, _ in authorizer.rules_for(user, namespace).rules]
    missing = uncovered(owner, wanted)
    if not missing:
        return None
    groups = "[" + " ".join(f'"{g}"' for g in user.groups) + "]"
    summary = "\n".join(rule.summary() for rule in missing)
    return forbidden(GROUP, plural, name,
                     f'user "{user.name}" (groups={groups}) is attempting to grant RBAC '
                     f"permissions not currently held:\n{summary}")


__all__ = ["CLUSTER_ROLES", "CLUSTER_ROLE_BINDINGS", "GROUP", "ROLES", "ROLE_BINDINGS",
           "RbacAuthorizer", "Rule", "escalation_check", "uncovered", "validate_rbac_object"]
