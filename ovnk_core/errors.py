"""The error kinds every part of ovnk raises.

Errors are split by what the caller should do about them, not by where they
come from: a ``ConfigError`` stops the process at startup with a message for
the operator; a ``NetworkConfigError`` is reported on one network (a status
condition) and never affects other networks; a ``PluginLoadError`` names the
entry point that could not be found or imported.
"""

from __future__ import annotations


class OvnkError(Exception):
    """Base class of all errors raised on purpose by ovnk."""


class ConfigError(OvnkError):
    """Flags, environment or config file are invalid or inconsistent.

    Raised before anything is started; the message is shown to the operator
    as is, so it names the flag(s) involved.
    """


class PluginLoadError(ConfigError):
    """An enabled plugin is not installed, or its entry point fails to import."""


class NetworkConfigError(OvnkError):
    """One network's configuration (NAD / netconf) is invalid.

    Carries a machine-readable ``reason`` (used as a condition reason) next
    to the human-readable message.
    """

    def __init__(self, message: str, reason: str = "InvalidNetworkConfig") -> None:
        super().__init__(message)
        self.reason = reason


class TopologyNotSupported(NetworkConfigError):
    """A network names a topology that no installed, enabled plugin provides."""

    def __init__(self, topology: str, available: list[str]) -> None:
        shown = ", ".join(sorted(available)) or "none"
        super().__init__(
            f"topology {topology!r} is not supported: no enabled topology plugin provides it "
            f"(available: {shown})",
            reason="TopologyNotSupported",
        )
        self.topology = topology


class CapabilityError(OvnkError):
    """The host lacks a kernel feature (for example VRF) that an operation needs.

    Callers catch this to degrade (and emit an event) instead of failing.
    """

    def __init__(self, capability: str, detail: str) -> None:
        super().__init__(f"kernel capability {capability!r} is not available: {detail}")
        self.capability = capability


class OvnTransactionError(OvnkError):
    """An OVSDB transaction failed; the database was left unchanged."""


class NotReady(OvnkError):
    """A dependency is not there yet (a node subnet, a NAD, a parent row).

    The reconcile is retried after a short fixed delay and does not spend the
    key's failure budget: waiting is not failing.
    """

    def __init__(self, message: str, delay: float | None = None, backoff: bool = False) -> None:
        super().__init__(message)
        self.delay = delay
        self.backoff = backoff  # wait longer each time (still outside the failure budget)


class TemporaryError(OvnkError):
    """A failure that may go away (API or OVSDB hiccup): retried with backoff."""

    def __init__(self, message: str, delay: float | None = None) -> None:
        super().__init__(message)
        self.delay = delay


class PermanentError(OvnkError):
    """The object itself is wrong; retrying cannot help until it (or its inputs) change.

    Controllers report it (status condition + event) and do not requeue; the
    next change of the object, or the periodic resync, reconciles it again.
    """

    def __init__(self, message: str, reason: str = "ReconcileFailed") -> None:
        super().__init__(message)
        self.reason = reason
