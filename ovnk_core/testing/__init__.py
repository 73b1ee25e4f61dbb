"""Test support shipped with ovnk-core, for ovnk's own tests and for plugin authors.

Installed as the pytest plugin ``ovnk`` (entry point ``pytest11``), so any
package that depends on ovnk-core gets the tier markers, the capability
checks and the real-process fixtures (ovsdb-server, network namespaces)
without a conftest of its own.
"""
