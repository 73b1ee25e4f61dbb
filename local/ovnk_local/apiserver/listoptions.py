"""List and watch query options: kube-apiserver's validation and what a watch starts from.

``sendInitialEvents`` (client-go's WatchList, on by default since 1.35) turns a watch
into a streaming list: every current object as ADDED, then -- with
``allowWatchBookmarks`` -- a BOOKMARK annotated ``k8s.io/initial-events-end: "true"``
at the snapshot's resourceVersion, then live events.  It requires
``resourceVersionMatch=NotOlderThan``; a resourceVersion newer than the server's is
504 "Too large resource version".  Without it a watch from ``""`` or ``"0"`` starts
with the current objects (the legacy behaviour), ``sendInitialEvents=false`` starts at
the newest resourceVersion with none.  Invalid combinations are 422 on
``ListOptions.meta.k8s.io``, with apimachinery's messages.  Booleans are read as Go's
query conversion reads them: anything but ``false``/``0`` is true.
"""

from __future__ import annotations

from dataclasses import dataclass

from ovnk_local.apiserver.errors import ApiStatusError, FieldError, bad_request, invalid

NOT_OLDER_THAN, EXACT = "NotOlderThan", "Exact"
_MATCH = "resourceVersionMatch"


def go_bool(value: str | None) -> bool:
    """A boolean query parameter (absent: false; ``false``/``0``: false; else true)."""
    return value is not None and value != "0" and value.lower() != "false"


def _optional_bool(value: str | None) -> bool | None:
    return None if value is None else go_bool(value)


def _forbidden(field: str, detail: str) -> FieldError:
    return FieldError("Forbidden", field, detail=detail)


def validate(query: dict[str, str], watch: bool) -> None:
    """422 for the option combinations kube-apiserver refuses (``ValidateListOptions``)."""
    match = query.get(_MATCH) or ""
    rv, continue_token = query.get("resourceVersion") or "", query.get("continue") or ""
    send_initial = _optional_bool(query.get("sendInitialEvents"))
    errors: list[FieldError] = []
    if watch:
        if send_initial is not None and match != NOT_OLDER_THAN:
            errors.append(_forbidden(_MATCH, "sendInitialEvents requires setting "
                                     f"resourceVersionMatch to {NOT_OLDER_THAN}"))
        if match:
            if send_initial is None:
                errors.append(_forbidden(_MATCH, "resourceVersionMatch is forbidden for watch "
                                         "unless sendInitialEvents is provided"))
            if match != NOT_OLDER_THAN:
                errors.append(FieldError("NotSupported", _MATCH, match,
                                         supported=(NOT_OLDER_THAN,)))
            if continue_token:
                errors.append(_forbidden(_MATCH, "resourceVersionMatch is forbidden when "
                                         "continue is provided"))
    else:
        if match:
            if not rv:
                errors.append(_forbidden(_MATCH, "resourceVersionMatch is forbidden unless "
                                         "resourceVersion is provided"))
            if continue_token:
                errors.append(_forbidden(_MATCH, "resourceVersionMatch is forbidden when "
                                         "continue is provided"))
            if match not in (EXACT, NOT_OLDER_THAN):
                errors.append(FieldError("NotSupported", _MATCH, match,
                                         supported=(EXACT, NOT_OLDER_THAN, "")))
            if match == EXACT and rv == "0":
                errors.append(_forbidden(_MATCH, 'resourceVersionMatch "exact" is forbidden '
                                         'for resourceVersion "0"'))
        if send_initial is not None:
            errors.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden "
                                     "for list"))
    if errors:
        raise invalid("meta.k8s.io", "ListOptions", "", errors)


@dataclass(frozen=True)
class WatchStart:
    """Where a watch starts: after ``since``, or (None) now -- with the current objects
    first when ``initial``, and their end marked when ``initial_end``."""

    since: int | None
    initial: bool
    initial_end: bool


def watch_start(query: dict[str, str], current: int) -> WatchStart:
    """The start of a (validated) watch request, ``current`` being the store's version."""
    rv = query.get("resourceVersion") or ""
    try:
        requested = None if rv in ("", "0") else int(rv)
    except ValueError as exc:
        raise bad_request(f"invalid resource version: {rv}") from exc
    send_initial = _optional_bool(query.get("sendInitialEvents"))
    if send_initial is None:
        return WatchStart(requested, requested is None, False)
    if not send_initial:
        return WatchStart(requested, False, False)
    if requested is not None and requested > current:
        raise too_large(requested, current)
    return WatchStart(None, True, go_bool(query.get("allowWatchBookmarks")))


def too_large(requested: int, current: int) -> ApiStatusError:
    """504: the state asked for is newer than the server's (the client starts over)."""
    return ApiStatusError(
        504, "Timeout", f"Timeout: Too large resource version: {requested}, current: {current}",
        {"causes": [{"reason": "ResourceVersionTooLarge",
                     "message": "Too large resource version"}], "retryAfterSeconds": 1})
