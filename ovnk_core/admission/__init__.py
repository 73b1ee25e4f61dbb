"""Admission rules that belong to ovnk rather than to a generic API server.

Each module registers its hooks through an entry point: ``ovnk.admission`` for rules an API
server runs itself (a real one as CEL; in development the local one of the ``ovnk-local``
distribution loads them), ``ovnk.webhook`` for rules ``ovnk webhook`` serves over HTTPS
(``ovnk_core.webhook``).  ``contract`` is everything the rules and such a server share:
the core imports no server.
"""
