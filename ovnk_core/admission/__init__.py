"""Admission rules that belong to ovnk rather than to the generic API server.

Each module registers its hooks through an ``ovnk.admission`` entry point, so the
local API server (``python -m ovnk_core.apiserver``) loads them by itself.
"""
