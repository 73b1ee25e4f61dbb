"""Request bodies must hold valid Unicode: no unpaired UTF-16 surrogate reaches the store.

JSON may spell a character as ``\\ud800``-style escapes; a high surrogate must be
followed by a low one.  Python's decoder (JSON and YAML alike) turns an unpaired
one into a lone surrogate code point, a string that cannot be encoded as UTF-8:
stored, it would break every reader that encodes it (OVSDB, logs, the Python
client's own requests).  Go's decoder, which kube-apiserver uses, replaces it
with U+FFFD instead, so a real cluster never stores one either, but silently
alters the text.  This server refuses such a body with 400 BadRequest naming
the field, rather than storing a string the client did not send; valid
characters outside the Basic Multilingual Plane (a proper surrogate pair)
are accepted.  NUL and other control characters are valid Unicode and are not
refused here: names reject them by their own rules, other strings keep them
as the real server does.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ovnk_local.apiserver.errors import bad_request

_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_surrogate(text: str) -> bool:
    return not text.isascii() and _SURROGATE.search(text) is not None


def _holds_no_surrogate(value: Any) -> bool:
    """Quickly: ``value`` holds no surrogate at all (UTF-8 encodes every string of it; an
    unpaired surrogate cannot be encoded).  False also when unsure (then the walk decides);
    every request body is checked, so the common case must not walk it in Python."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError):
        return False
    return True


def _first_surrogate(text: str) -> str:
    return next(f"\\u{ord(c):04x}" for c in text if 0xD800 <= ord(c) <= 0xDFFF)


def unpaired_surrogate(value: Any, path: str = "") -> tuple[str, str] | None:
    """Where the first unpaired surrogate in a decoded document is: ``(field path, the
    surrogate as an escape)``, or None.  Map keys are checked as well as strings."""
    if isinstance(value, str):
        return (path, _first_surrogate(value)) if _has_surrogate(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and _has_surrogate(key):
                return (f"{path} (a key)" if path else "(a key)", _first_surrogate(key))
            found = unpaired_surrogate(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = unpaired_surrogate(item, f"{path}[{index}]")
            if found:
                return found
    return None


def check_unicode(value: Any, what: str = "request body") -> None:
    """Raise 400 BadRequest when ``value`` (a decoded body) holds an unpaired surrogate."""
    if _holds_no_surrogate(value):
        return
    found = unpaired_surrogate(value)
    if found is None:
        return
    path, escape = found
    where = f" at {path}" if path else ""
    raise bad_request(f"error decoding {what}: invalid Unicode{where}: unpaired UTF-16 "
                          f"surrogate {escape} (a character outside the Basic Multilingual "
                          "Plane must be a surrogate pair)")


__all__ = ["check_unicode", "unpaired_surrogate"]
