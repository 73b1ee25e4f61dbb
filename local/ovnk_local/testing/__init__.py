"""Test support that needs the local API server: its fixtures and the control plane on it.

Installed as the pytest plugin ``ovnk-local`` (entry point ``pytest11``); the tier markers,
capability checks and OVN/netns fixtures are the core's ``ovnk`` plugin
(``ovnk_core.testing``).
"""
