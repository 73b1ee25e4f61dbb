"""The ``ovnk-local`` pytest plugin: Kubernetes API fixtures on the local API server.

``cluster_pki`` (the session's cluster CA), ``kube_apiserver_factory``,
``kube_apiserver`` and ``kube_client`` (see ``apiserver_fixtures``).  Any package
whose tests depend on ``ovnk-local`` gets them without a conftest of its own.
"""

from __future__ import annotations

from ovnk_local.testing.apiserver_fixtures import (
    cluster_pki,
    kube_apiserver,
    kube_apiserver_factory,
    kube_client,
)

__all__ = ["cluster_pki", "kube_apiserver", "kube_apiserver_factory", "kube_client"]
