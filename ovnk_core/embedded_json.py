"""JSON that users write inside an object's strings, decoded into text every writer accepts.

A NAD's ``spec.config`` and the annotations users write (``k8s.v1.cni.cncf.io/networks``,
``v1.multus-cni.io/default-network``, even ``k8s.ovn.org/pod-networks``) are JSON documents
inside a string.  The API server checks the object's own JSON, not the document inside
one of its strings, so such a document may spell a lone UTF-16 surrogate as an escape
(``"name":"\\ud800"``).  Python's decoder turns it into a string no UTF-8 can encode:
every annotation, event, condition or OVSDB row that later carries it is refused (the API
server answers ``invalid Unicode``), so the object it came from would be retried forever
and its own Warning event refused for the same reason.

``loads`` is the one decoder for these documents: nesting bounded (``jsondepth``), and a
document holding an unpaired surrogate is ``InvalidUnicode`` (a ``ValueError``) whose
message shows the surrogate as an escape, so the message itself is valid text.  Valid
characters outside the Basic Multilingual Plane (a proper surrogate pair) decode as they
should.  ``printable`` makes any other text safe to write into an event.
"""

from __future__ import annotations

import re
from typing import Any

from ovnk_core import jsondepth

# Where a lone surrogate can come from: a \uD800-\uDFFF escape, or such a character itself.
_MAY_HOLD_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class InvalidUnicode(ValueError):
    """A decoded document holds an unpaired UTF-16 surrogate."""

    def __init__(self, path: str, surrogate: str) -> None:
        where = f" at {path}" if path else ""
        super().__init__(f"invalid Unicode{where}: unpaired UTF-16 surrogate "
                         f"{escape(surrogate)} (a character outside the Basic Multilingual "
                         "Plane must be a surrogate pair)")
        self.path = path


def escape(text: str) -> str:
    """``text`` with every surrogate code point spelled as its ``\\uXXXX`` escape."""
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def printable(text: str) -> str:
    """``text`` as valid Unicode (unchanged unless it holds a surrogate: ``escape``)."""
    return text if text.isascii() or not _SURROGATE.search(text) else escape(text)


def unpaired_surrogate(value: Any) -> tuple[str, str] | None:
    """Where the first unpaired surrogate in a decoded document is: ``(field path,
    the surrogate)``, or ``None``.  Map keys are checked as well as strings.  Iterative:
    any depth is safe."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        current, path = stack.pop()
        if isinstance(current, str):
            found = _SURROGATE.search(current)
            if found:
                return path, found.group()
        elif isinstance(current, dict):
            for key, item in reversed(list(current.items())):
                if isinstance(key, str) and (found := _SURROGATE.search(key)):
                    return (f"{path} (a key)" if path else "(a key)"), found.group()
                stack.append((item, f"{path}.{key}" if path else str(key)))
        elif isinstance(current, list):
            stack.extend((item, f"{path}[{index}]")
                         for index, item in reversed(list(enumerate(current))))
    return None


def loads(text: str) -> Any:
    """Decode a JSON document written inside an object's string.

    :raises ValueError: not JSON (``json.JSONDecodeError``), nested too deeply
        (``jsondepth.TooDeep``) or holding an unpaired surrogate (``InvalidUnicode``).
    """
    value = jsondepth.loads(text)
    if _MAY_HOLD_SURROGATE.search(text):
        found = unpaired_surrogate(value)
        if found is not None:
            raise InvalidUnicode(*found)
    return value


__all__ = ["InvalidUnicode", "escape", "loads", "printable", "unpaired_surrogate"]
