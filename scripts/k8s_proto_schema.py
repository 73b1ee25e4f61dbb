#!/usr/bin/env python3
"""Derive the local API server's protobuf schema from Kubernetes' own sources.

The wire form of every built-in kind is a fact of Kubernetes: field numbers and types
are in each API package's ``generated.proto``; how a field appears in JSON (its name,
``omitempty``/``omitzero``, whether Go holds it as a pointer, ``json:",inline"``) is in
the Go struct tags of the same package.  This script reads both from a tree of Go
packages -- the ``vendor/`` directory of a snapshot of upstream OVN-Kubernetes --
and writes ``local/ovnk_local/apiserver/k8s_proto_schema.json``: data only, which
``ovnk_local.apiserver.protobuf_messages`` interprets.  A built-in kind the server starts to
serve needs no code: its message is already there.

Usage (from the repository root):

    scripts/k8s_proto_schema.py --git /work/.mirror/ovn-kubernetes+ovn-kubernetes/repo \
        --prefix go-controller/vendor
    scripts/k8s_proto_schema.py --dir path/to/vendor

Output format (one JSON object):
    "source":   where the facts came from
    "packages": proto package -> API version served from it (``v1``, ``apps/v1``, ...)
    "messages": full message name -> either
        {"fields": [[number, json name, type, mode, flags], ...]}  (ordered by number)
        {"special": "time" | "microtime" | "duration" | "quantity" | "intorstring" |
                    "rawjson" | "propsorarray" | "propsorbool" | "propsorstringarray"}
        {"list": item type}   (a Go named slice, e.g. ``ExtraValue []string``: JSON is the
                               bare array, the wire form a message of repeated field 1)
    type:  a proto scalar (string bytes bool int32 int64 uint32 uint64 double float) or a
           full message name
    mode:  "" (singular), "r" (repeated), "m" (map<string, type>)
    flags: "p" Go pointer (written and shown only when set), "o" omitempty,
           "z" omitzero, "i" inline (the message's fields sit in the parent JSON object)
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

OUTPUT = Path(__file__).resolve().parent.parent / "local/ovnk_local/apiserver/k8s_proto_schema.json"

# packages whose kinds are served or embedded: every GA version of k8s.io/api, the
# apimachinery types they use, and the CRD kind itself
_API_VERSION = re.compile(r"^k8s\.io/api/[a-z0-9]+/v[0-9]+$")
_EXTRA_PACKAGES = (
    "k8s.io/apimachinery/pkg/apis/meta/v1",
    "k8s.io/apimachinery/pkg/runtime",
    "k8s.io/apimachinery/pkg/api/resource",
    "k8s.io/apimachinery/pkg/util/intstr",
    "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1",
)
_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_APIEXT = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"
# Go types whose JSON form is written by hand (MarshalJSON) rather than by their fields
SPECIAL = {
    f"{_META}.Time": "time",
    f"{_META}.MicroTime": "microtime",
    f"{_META}.Duration": "duration",
    f"{_META}.FieldsV1": "rawjson",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "rawjson",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "quantity",
    "k8s.io.apimachinery.pkg.api.resource.QuantityValue": "quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "intorstring",
    f"{_APIEXT}.JSON": "rawjson",
    f"{_APIEXT}.JSONSchemaPropsOrArray": "propsorarray",
    f"{_APIEXT}.JSONSchemaPropsOrBool": "propsorbool",
    f"{_APIEXT}.JSONSchemaPropsOrStringArray": "propsorstringarray",
}
SCALARS = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "double", "float"}

_MESSAGE = re.compile(r"^message (\w+) \{$")
_FIELD = re.compile(r"^\s+(optional|repeated|required) (\S+) (\w+) = (\d+);")
_MAP = re.compile(r"^\s+map<(\S+), ?(\S+)> (\w+) = (\d+);")
_PACKAGE = re.compile(r"^package ([\w.]+);")
_STRUCT = re.compile(r"^type (\w+) struct ?\{(\}?)")
_NAMED_SLICE = re.compile(r"^type (\w+) \[\]\S+\s*$")
_ALIAS = re.compile(r"^type (\w+) \w+\.(\w+)\s*$")  # type List metav1.List
_GO_FIELD = re.compile(r"^\s*(?:([A-Z]\w*)\s+)?(\S+)\s+`([^`]*)`")
_TAG = re.compile(r'(\w+):"([^"]*)"')
_GROUP_NAME = re.compile(r'^(?:// \+groupName=(\S*)\s*|const GroupName = "([^"]*)")$', re.M)


class Source:
    """A tree of Go packages: a directory, or a path inside a git commit."""

    def __init__(self, directory: Path | None, git: Path | None, ref: str, prefix: str):
        self.directory, self.git, self.ref, self.prefix = directory, git, ref, prefix.strip("/")

    def describe(self) -> str:
        if self.git is not None:
            commit = subprocess.run(["git", "-C", str(self.git), "rev-parse", self.ref],
                                    check=True, capture_output=True, text=True).stdout.strip()
            return f"git {self.git.name} {commit} {self.prefix}/"
        return str(self.directory)

    def files(self, package: str) -> list[str]:
        """File names (not paths) directly in ``package``."""
        if self.git is not None:
            out = subprocess.run(
                ["git", "-C", str(self.git), "ls-tree", "--name-only", f"{self.ref}:"
                 f"{self.prefix}/{package}"], capture_output=True, text=True)
            return out.stdout.split() if out.returncode == 0 else []
        path = self._path(package)
        return sorted(p.name for p in path.iterdir() if p.is_file()) if path.is_dir() else []

    def packages(self, root: str) -> list[str]:
        """Every package below ``root`` holding a generated.proto."""
        if self.git is not None:
            out = subprocess.run(["git", "-C", str(self.git), "ls-tree", "-r", "--name-only",
                                  self.ref, f"{self.prefix}/{root}"],
                                 check=True, capture_output=True, text=True).stdout.split()
            return sorted(p[len(self.prefix) + 1:].rsplit("/", 1)[0] for p in out
                          if p.endswith("/generated.proto"))
        base = self._path(root)
        return sorted(str(p.parent.relative_to(self._path(""))) for p in
                      base.rglob("generated.proto"))

    def read(self, package: str, name: str) -> str:
        if self.git is not None:
            return subprocess.run(["git", "-C", str(self.git), "show",
                                   f"{self.ref}:{self.prefix}/{package}/{name}"],
                                  check=True, capture_output=True, text=True).stdout
        return (self._path(package) / name).read_text()

    def _path(self, package: str) -> Path:
        assert self.directory is not None
        return self.directory / package


@dataclass
class ProtoField:
    number: int
    name: str
    type: str
    mode: str


@dataclass
class GoField:
    json_name: str
    flags: str


def parse_proto(text: str) -> tuple[str, dict[str, list[ProtoField]]]:
    """The package and its messages (fields with unresolved type names)."""
    package = ""
    messages: dict[str, list[ProtoField]] = {}
    current: list[ProtoField] | None = None
    for line in text.splitlines():
        if match := _PACKAGE.match(line):
            package = match.group(1)
        elif match := _MESSAGE.match(line):
            current = messages.setdefault(match.group(1), [])
        elif line == "}":
            current = None
        elif current is not None and (match := _MAP.match(line)):
            key, value, name, number = match.groups()
            if key != "string":
                raise SystemExit(f"map with {key} keys in {package}: not supported")
            current.append(ProtoField(int(number), name, value, "m"))
        elif current is not None and (match := _FIELD.match(line)):
            label, type_name, name, number = match.groups()
            current.append(ProtoField(int(number), name, type_name,
                                      "r" if label == "repeated" else ""))
    return package, messages


@dataclass
class GoPackage:
    structs: dict[str, dict[str, GoField]]  # struct -> proto field name -> JSON facts
    slices: set[str]  # named slice types
    aliases: dict[str, str]  # type defined as another package's struct -> that struct


def parse_go(text: str, into: GoPackage) -> None:
    """Add the structs, named slices and aliases of one Go file to ``into``."""
    structs, slices = into.structs, into.slices
    current: dict[str, GoField] | None = None
    for line in text.splitlines():
        if match := _ALIAS.match(line):
            into.aliases[match.group(1)] = match.group(2)
        elif match := _STRUCT.match(line):
            current = structs.setdefault(match.group(1), {})
            if match.group(2):  # type Patch struct{}
                current = None
        elif line.startswith("}"):
            current = None
        elif match := _NAMED_SLICE.match(line):
            slices.add(match.group(1))
        elif current is not None and (match := _GO_FIELD.match(line)):
            go_name, go_type, tag = match.groups()
            tags = dict(_TAG.findall(tag))
            proto = tags.get("protobuf", "")
            if not proto or proto == "-":
                continue
            proto_name = next((p[5:] for p in proto.split(",") if p.startswith("name=")), "")
            if not proto_name:  # an embedded struct without name=: its lowerCamel type name
                embedded = go_name or go_type.lstrip("*").rsplit(".", 1)[-1]
                proto_name = embedded[0].lower() + embedded[1:]
            json_parts = tags.get("json", "").split(",")
            flags = ""
            if go_type.startswith("*"):
                flags += "p"
            if "omitempty" in json_parts[1:]:
                flags += "o"
            if "omitzero" in json_parts[1:]:
                flags += "z"
            if "inline" in json_parts[1:] and not json_parts[0]:
                flags += "i"
            current[proto_name] = GoField(json_parts[0], flags)


def resolve(type_name: str, package: str, local: set[str]) -> str:
    if type_name in SCALARS:
        return type_name
    if type_name.startswith("."):
        return type_name[1:]
    if type_name in local:
        return f"{package}.{type_name}"
    return type_name


def group_version(source: Source, package: str) -> str | None:
    """The API version of a k8s.io/api-style package (from ``+groupName``), if any."""
    version = package.rsplit("/", 1)[1]
    for name in ("doc.go", "register.go"):
        if name in source.files(package):
            match = _GROUP_NAME.search(source.read(package, name))
            if match:
                group = match.group(1) if match.group(1) is not None else match.group(2)
                return f"{group}/{version}" if group else version
    return None


def build(source: Source) -> dict[str, object]:
    packages = [p for p in source.packages("k8s.io/api") if _API_VERSION.match(p)]
    packages += [p for p in _EXTRA_PACKAGES if "generated.proto" in source.files(p)]
    api_versions: dict[str, str] = {}
    messages: dict[str, object] = {}
    go_packages: dict[str, GoPackage] = {}
    for package_dir in packages:
        go = go_packages[package_dir] = GoPackage({}, set(), {})
        for name in source.files(package_dir):
            if name.endswith(".go") and not name.endswith("_test.go") and \
                    not name.startswith(("zz_generated", "generated")):
                parse_go(source.read(package_dir, name), go)
    for package_dir in packages:
        proto_package, proto_messages = parse_proto(source.read(package_dir, "generated.proto"))
        go_structs = go_packages[package_dir].structs
        go_slices = go_packages[package_dir].slices
        version = group_version(source, package_dir)
        if version is not None and package_dir.startswith(("k8s.io/api/",
                                                             "k8s.io/apiextensions")):
            api_versions[proto_package] = version
        local = set(proto_messages)
        for name, fields in proto_messages.items():
            full = f"{proto_package}.{name}"
            if full in SPECIAL:
                messages[full] = {"special": SPECIAL[full]}
                continue
            if name in go_slices:
                (item,) = fields
                messages[full] = {"list": resolve(item.type, proto_package, local)}
                continue
            go = go_structs.get(name)
            alias = go_packages[package_dir].aliases.get(name)
            if go is None and alias is not None:
                go = next((p.structs[alias] for p in go_packages.values()
                           if alias in p.structs), None)
            if go is None:
                raise SystemExit(f"{full}: no Go struct of that name in {package_dir}")
            rows = []
            for field in sorted(fields, key=lambda f: f.number):
                facts = go.get(field.name)  # type: ignore[union-attr]
                if facts is None:
                    raise SystemExit(f"{full}.{field.name}: no Go field carries it")
                rows.append([field.number, facts.json_name,
                             resolve(field.type, proto_package, local), field.mode, facts.flags])
            messages[full] = {"fields": rows}
    missing = sorted({row[2] for m in messages.values() if isinstance(m, dict)  # type: ignore
                      for row in m.get("fields", []) if row[2] not in SCALARS
                      and row[2] not in messages})
    if missing:
        raise SystemExit(f"messages referenced but not found: {missing}")
    return {"source": source.describe(), "packages": dict(sorted(api_versions.items())),
            "messages": dict(sorted(messages.items()))}


def dump(schema: dict[str, object]) -> str:
    """One message per line: small diffs when Kubernetes changes."""
    lines = ["{", f' "source": {json.dumps(schema["source"])},',
             f' "packages": {json.dumps(schema["packages"], separators=(",", ":"))},',
             ' "messages": {']
    messages = schema["messages"]
    assert isinstance(messages, dict)
    entries = [f"  {json.dumps(name)}: {json.dumps(body, separators=(',', ':'))}"
               for name, body in messages.items()]
    lines.append(",\n".join(entries))
    lines += [" }", "}", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--dir", type=Path, help="a vendor-style directory (k8s.io/api/...)")
    where.add_argument("--git", type=Path, help="a git repository (bare or not)")
    parser.add_argument("--ref", default="HEAD", help="commit to read with --git")
    parser.add_argument("--prefix", default="", help="path of the vendor tree in the commit")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    schema = build(Source(args.dir, args.git, args.ref, args.prefix))
    args.output.write_text(dump(schema))
    messages = schema["messages"]
    assert isinstance(messages, dict)
    print(f"{args.output}: {len(messages)} messages from {len(schema['packages'])} API "  # type: ignore[arg-type]
          f"versions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
