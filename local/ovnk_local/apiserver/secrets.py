"""Secrets: ``stringData`` folded into ``data``, the default type, and kube-apiserver's checks.

``stringData`` is write-only: the real server converts it into base64
``data`` (its keys win over ``data``'s) and never stores it.  A Secret's
keys are config keys, its data at most 1 MiB, its ``type`` fixed once
created, a ``kubernetes.io/tls`` Secret has ``tls.crt`` and ``tls.key``, a
``kubernetes.io/service-account-token`` Secret names its account; an
``immutable`` Secret keeps its data.  No token controller fills
service-account-token Secrets here: this server's service-account tokens are
the bound tokens of ``TokenRequest`` (``kubectl create token``).
"""

from __future__ import annotations

import base64
import re

from ovnk_local.apiserver.errors import JSON, OMIT, FieldError

MAX_SECRET_SIZE = 1024 * 1024
_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
CONFIG_KEY_MSG = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
                  "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                  "validation is '[-._a-zA-Z0-9]+')")
IMMUTABLE = "field is immutable when `immutable` is set"
SERVICE_ACCOUNT_NAME = "kubernetes.io/service-account.name"
_REQUIRED_KEYS = {"kubernetes.io/tls": ("tls.crt", "tls.key"),
                  "kubernetes.io/dockercfg": (".dockercfg",),
                  "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
                  "kubernetes.io/ssh-auth": ("ssh-privatekey",)}


def prepare_secret(obj: JSON) -> None:
    """Fold ``stringData`` into ``data`` and default ``type`` (in place)."""
    strings = obj.pop("stringData", None)
    if isinstance(strings, dict) and strings:
        data = dict(obj.get("data") or {})
        for key, value in strings.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data
    if not obj.get("type"):
        obj["type"] = "Opaque"


def config_key_errors(key: str) -> list[str]:
    """apimachinery's ``IsConfigMapKey``."""
    problems = ["must be no more than 253 characters"] if len(key) > 253 else []
    if not _CONFIG_KEY.fullmatch(key):
        problems.append(CONFIG_KEY_MSG)
    if key in (".", ".."):
        problems.append(f"must not be '{key}'")
    elif key.startswith(".."):
        problems.append("must not start with '..'")
    return problems


def validate_secret(obj: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateSecret`` (and ``ValidateSecretUpdate`` with ``old``)."""
    data = obj.get("data") or {}
    errors: list[FieldError] = []
    size = 0
    for key, value in data.items():
        errors += [FieldError("Invalid", f"data[{key}]", key, problem)
                   for problem in config_key_errors(key)]
        size += len(base64.b64decode(value)) if isinstance(value, str) else 0
    if size > MAX_SECRET_SIZE:
        errors.append(FieldError("TooLong", "data", OMIT,
                                 f"may not be more than {MAX_SECRET_SIZE} bytes"))
    kind = obj.get("type") or ""
    if kind == "kubernetes.io/service-account-token":
        annotations = obj["metadata"].get("annotations") or {}
        if not annotations.get(SERVICE_ACCOUNT_NAME):
            errors.append(FieldError("Required",
                                     f"metadata.annotations[{SERVICE_ACCOUNT_NAME}]", OMIT))
    errors += [FieldError("Required", f"data[{key}]", OMIT)
               for key in _REQUIRED_KEYS.get(kind, ()) if key not in data]
    if old is None:
        return errors
    if kind != (old.get("type") or ""):
        errors.append(FieldError("Invalid", "type", kind, "field is immutable"))
    if old.get("immutable"):
        if not obj.get("immutable"):
            errors.append(FieldError("Forbidden", "immutable", OMIT, IMMUTABLE))
        if data != (old.get("data") or {}):
            errors.append(FieldError("Forbidden", "data", OMIT, IMMUTABLE))
    return errors
