"""How Go's ``encoding/json`` names a JSON value in its errors.

Upstream's readers of annotations and the API server's decoding of request
bodies both fail with Go's ``json: cannot unmarshal <kind> into Go value of
type <T>``; ovnk words the same failures the same way, from this one table.
"""

from __future__ import annotations

from typing import Any


def unmarshal_kind(value: Any) -> str:
    """The word Go's ``UnmarshalTypeError`` uses for a decoded JSON ``value``."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
