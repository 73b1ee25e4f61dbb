"""Test support shipped with ovnk-core, for ovnk's own tests and for plugin authors.

Installed as the pytest plugin ``ovnk`` (entry point ``pytest11``), so any
package that depends on ovnk-core gets the tier markers, the capability
checks and the real-process fixtures (ovsdb-server, network namespaces)
without a conftest of its own.  Nothing here needs a Kubernetes API server:
the local one, its fixtures and the in-process control plane on it are the
``ovnk-local`` distribution's (``ovnk_local.testing``).
"""
