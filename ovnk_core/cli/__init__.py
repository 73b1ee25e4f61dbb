"""The ``ovnk`` command: one module per subcommand, wired together in ``main``."""

ENTRY_POINT_GROUP = "ovnk.cli"
"""Subcommands of other distributions (see ``ovnk_core.cli.main``)."""
