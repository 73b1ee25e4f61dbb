"""A local Kubernetes API server for ovnk's local cluster and tests.

No real kube-apiserver can run on the machines ovnk targets for development,
so the core carries its own: built-in kinds plus CRD-defined kinds over real
HTTP, with the semantics controllers and kubectl rely on (resourceVersion,
watch with bookmarks and 410, patch types, selectors, finalizers, garbage
collection, namespace deletion, CRD schema validation, admission hooks,
optional persistence), behind the front door a real one has: HTTPS only,
client-certificate and token authentication, RBAC, impersonation.  Start it
with ``serve()`` or ``python -m ovnk_local.apiserver``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ovnk_core.admission.contract import PolicyDenied
    from ovnk_local.apiserver.admission import AdmissionRegistry
    from ovnk_local.apiserver.errors import ApiStatusError, FieldError
    from ovnk_local.apiserver.security import SecurityOptions
    from ovnk_local.apiserver.server import ServerHandle, ServerOptions, serve

# imported when first used, not with the package: a process that needs one of its modules
# (``ovnk local``'s components need ``security``'s file names) does not load the server
_WHERE = {"PolicyDenied": "ovnk_core.admission.contract",
          "AdmissionRegistry": "ovnk_local.apiserver.admission",
          "ApiStatusError": "ovnk_local.apiserver.errors",
          "FieldError": "ovnk_local.apiserver.errors",
          "SecurityOptions": "ovnk_local.apiserver.security",
          "ServerHandle": "ovnk_local.apiserver.server",
          "ServerOptions": "ovnk_local.apiserver.server",
          "serve": "ovnk_local.apiserver.server"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)

__all__ = ["AdmissionRegistry", "ApiStatusError", "FieldError", "PolicyDenied",
           "SecurityOptions", "ServerHandle", "ServerOptions", "serve"]
