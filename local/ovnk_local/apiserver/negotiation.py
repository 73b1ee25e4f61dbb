"""Which encoding a resource reply uses: kube-apiserver's Accept negotiation.

The Accept header's clauses are ordered as ``goautoneg`` orders them (by ``q``, then
concrete before wildcard types); the first clause this server can honour wins:
``application/json``, ``application/yaml`` (answered as JSON here) or
``application/vnd.kubernetes.protobuf``, with ``as=Table;g=meta.k8s.io;v=v1`` for
kubectl's tables (JSON only, as in kube-apiserver) and ``stream=watch`` for watches
(YAML has no stream form).  Custom resources have no protobuf form: a protobuf clause
is skipped for them, so client-go's ``protobuf,json`` gets JSON.  No clause to
honour is 406 NotAcceptable, worded as kube-apiserver words it; an empty header means
JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

from ovnk_local.apiserver.errors import ApiStatusError
from ovnk_local.apiserver.protobuf import MEDIA_TYPE as PROTOBUF

JSON_TYPE, YAML_TYPE = "application/json", "application/yaml"
SUPPORTED = (JSON_TYPE, YAML_TYPE, PROTOBUF)
_TABLE_VERSIONS = ("v1", "v1beta1")


@dataclass(frozen=True)
class Clause:
    type: str
    subtype: str
    q: float
    params: dict[str, str]


@dataclass(frozen=True)
class Output:
    """The negotiated reply: ``media`` (one of ``SUPPORTED``) and whether it is a Table."""

    media: str = JSON_TYPE
    table: bool = False

    @property
    def protobuf(self) -> bool:
        return self.media == PROTOBUF


def _less(a: Clause, b: Clause) -> bool:
    return a.q > b.q or (a.type != "*" and b.type == "*") or (
        a.subtype != "*" and b.subtype == "*")


def parse_accept(header: str) -> list[Clause]:
    """The clauses of an Accept header in goautoneg's order."""
    clauses: list[Clause] = []
    for part in header.split(","):
        media, *params = part.strip(" ").split(";")
        kind, _, subtype = media.partition("/")
        kind = kind.strip(" ")
        if not subtype:
            if kind != "*":
                continue
            subtype = "*"
        elif "/" in subtype:
            continue
        q, values = 1.0, {}
        for param in params:
            key, sep, value = param.partition("=")
            if not sep or "=" in value:
                continue
            key = key.strip(" ")
            if key == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
            else:
                values[key] = value.strip(" ")
        clauses.append(Clause(kind, subtype.strip(" "), q, values))
    for i in range(1, len(clauses)):  # insertion sort: Go's sort of a short slice
        j = i
        while j > 0 and _less(clauses[j], clauses[j - 1]):
            clauses[j], clauses[j - 1] = clauses[j - 1], clauses[j]
            j -= 1
    return clauses


def _allows(media: str, params: dict[str, str], custom: bool, watch: bool) -> Output | None:
    stream = params.get("stream", "")
    if stream and (media == YAML_TYPE or stream != "watch"):
        return None
    if watch and media == YAML_TYPE:
        return None
    convert = params.get("as")
    if convert is None and not params.get("g") and not params.get("v"):
        return None if custom and media == PROTOBUF else Output(media)
    if params.get("g") == "meta.k8s.io" and params.get("v") in _TABLE_VERSIONS and \
            convert == "Table" and media != PROTOBUF:
        return Output(media, table=True)
    return None  # PartialObjectMetadata and other conversions are not served


def negotiate(accept: str, custom: bool = False, watch: bool = False) -> Output:
    """The reply encoding for a resource request; 406 when nothing acceptable is served."""
    if not accept.strip():
        return Output()
    for clause in parse_accept(accept):
        for media in SUPPORTED:
            kind, _, subtype = media.partition("/")
            if (clause.type == "*" and clause.subtype == "*") or (clause.type == kind and (
                    clause.subtype in (subtype, "*"))):
                output = _allows(media, clause.params, custom, watch)
                if output is not None:
                    return output
    offered = [f"{m};stream=watch" for m in SUPPORTED if m != YAML_TYPE] if watch \
        else list(SUPPORTED)
    raise ApiStatusError(406, "NotAcceptable", "only the following media types are "
                         f"accepted: {', '.join(offered)}")
