"""The ``ovnk-local`` pytest plugin: Kubernetes API fixtures on the local API server.

``cluster_pki`` (the session's cluster CA), ``kube_apiserver_factory``,
``kube_apiserver`` and ``kube_client`` (see ``apiserver_fixtures``).  Any package
whose tests depend on ``ovnk-local`` gets them without a conftest of its own.  Under
``pytest -n N --dist loadscope`` the modules that share one ``ovnk local`` cluster run in one
worker (``xdist_scopes``).
"""

from __future__ import annotations

from typing import Any

import pytest

from ovnk_local.testing.apiserver_fixtures import (
    cluster_pki,
    kube_apiserver,
    kube_apiserver_factory,
    kube_client,
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: Any, log: Any) -> Any:
    from ovnk_local.testing.xdist_scopes import make_scheduler  # only where xdist runs

    return make_scheduler(config, log)


__all__ = ["cluster_pki", "kube_apiserver", "kube_apiserver_factory", "kube_client"]
