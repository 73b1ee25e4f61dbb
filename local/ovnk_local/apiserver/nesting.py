"""Request bodies, and the objects patches make, nest at most ``MAX_BODY_DEPTH`` levels.

kube-apiserver decodes with Go, which accepts 10,000 levels.  This server
is Python: its decoders (JSON and YAML), ``copy.deepcopy``, schema
validation, managed fields and the encoders of replies, watches and the
snapshot all recurse, and give out near 1,000 levels with a
``RecursionError`` (a 500, or a watch that dies on the same event every
time it is resumed).  So nesting is bounded where documents come in: a body
nested deeper than ``MAX_BODY_DEPTH`` is refused with 400 BadRequest, and so
is a patch whose result would be — a JSON patch can build depth that no
single body has.  The bound is far beyond any real object (CRD schemas nest
about 20 levels) and leaves every stored object, its managed fields
included, well inside what ovnk's clients decode (``jsondepth.MAX_DEPTH``).
"""

from __future__ import annotations

from typing import Any

from ovnk_core import jsondepth
from ovnk_local.apiserver.errors import bad_request

MAX_BODY_DEPTH = 100
TOO_DEEP = f"nested deeper than {MAX_BODY_DEPTH} levels (this server's limit)"


def loads(data: bytes | str, what: str) -> Any:
    """Decode JSON from a request (``what``: "request body", "patch").

    :raises ApiStatusError: 400 when it is not JSON, or nests too deeply.
    """
    try:
        return jsondepth.loads(data, MAX_BODY_DEPTH)
    except jsondepth.TooDeep:
        raise bad_request(f"error decoding {what}: {TOO_DEEP}") from None
    except ValueError as exc:
        raise bad_request(f"error decoding {what}: {exc}") from exc


def check_decoded(value: Any, what: str) -> None:
    """For decoders other than ``loads`` (YAML).

    :raises ApiStatusError: 400 when ``value`` nests deeper than ``MAX_BODY_DEPTH``.
    """
    if jsondepth.depth(value, MAX_BODY_DEPTH) > MAX_BODY_DEPTH:
        raise bad_request(f"error decoding {what}: {TOO_DEEP}")


def check_patched(value: Any) -> None:
    """:raises ApiStatusError: 400 when the object a patch made nests too deeply."""
    if jsondepth.depth(value, MAX_BODY_DEPTH) > MAX_BODY_DEPTH:
        raise bad_request(f"the patched object would be {TOO_DEEP}")


__all__ = ["MAX_BODY_DEPTH", "TOO_DEEP", "check_decoded", "check_patched", "loads"]
