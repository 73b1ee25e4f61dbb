"""The ``ovnk`` command: one module per subcommand, wired together in ``main``."""
