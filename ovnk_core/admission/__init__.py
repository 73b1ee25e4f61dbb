"""Admission rules that belong to ovnk rather than to a generic API server.

Each module registers its hooks through an ``ovnk.admission`` entry point; an API server
that runs them (in development the local one of the ``ovnk-local`` distribution) loads
them by itself.  ``contract`` is everything the rules and such a server share: the core
imports no server.
"""
