"""The CustomResourceDefinitions ovnk needs, as objects and as shipped YAML files.

``build_crds()`` is the single source; ``ovnk_core/manifests/crds/*.yaml``
are its output (``python -m ovnk_core.manifests.crds`` rewrites them, and a
test fails when they drift).  UDN and CUDN are ovnk's own API;
NetworkAttachmentDefinition, EgressIP, IPAMClaim and MultiNetworkPolicy are the upstream
kinds ovnk reads and writes, included so a cluster has everything it needs.

The UDN and CUDN schemas are made of the topology plugins' sections
(``UdnSection``, ``ovnk_core.udn_section``): a cluster applies the CRDs built
from the sections of the topologies its configuration enables
(``build_crds(sections_for(config))``), so the API server itself rejects a
topology nobody renders.  Without sections every installed topology's section
is used.  The checked-in files are made of the bundled topologies' sections
only (``shipped_sections``), so installing another topology changes neither
them nor the test that compares them with the builders.

``python -m ovnk_core.manifests.crds`` rewrites the checked-in files;
``--check`` only compares, ``--topologies`` with ``--dir`` writes the CRDs of
other topology plugins (a cluster with a third-party topology) elsewhere, and
``--help`` says so.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ovnk_core.config import load_config
from ovnk_core.config.defaults import BUNDLED_TOPOLOGIES
from ovnk_core.errors import OvnkError
from ovnk_core.manifests.crd_schemas import conditions_status, cudn_spec, udn_spec
from ovnk_core.manifests.kustomize import (
    KUSTOMIZATION,
    listed_resources,
    manifest_files,
    render_kustomization,
)
from ovnk_core.udn.sections import UdnSections, installed_sections, sections_for

JSON = dict[str, Any]
CRD_DIR = Path(__file__).resolve().parent / "crds"
KUSTOMIZE_COMMENT = """The CRDs ovnk needs, as kustomize sees them: dist/kustomization.yaml includes
this directory, so a deployment installs these very files (python -m ovnk_core.manifests.crds
writes them and this list; a test fails when they drift from their builders)."""


def crd(group: str, kind: str, plural: str, singular: str, scope: str, version: str,
        schema: JSON, short_names: list[str] | None = None, status: bool = True,
        printer_columns: list[JSON] | None = None) -> JSON:
    version_entry: JSON = {"name": version, "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": schema}}
    if status:
        version_entry["subresources"] = {"status": {}}
    if printer_columns:
        version_entry["additionalPrinterColumns"] = printer_columns
    names: JSON = {"kind": kind, "listKind": f"{kind}List", "plural": plural,
                   "singular": singular}
    if short_names:
        names["shortNames"] = short_names
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "names": names, "scope": scope,
                     "versions": [version_entry]}}


def root(spec: JSON | None, status: JSON | None = None, required: list[str] | None = None,
         description: str = "") -> JSON:
    properties: JSON = {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                        "metadata": {"type": "object"}}
    if spec is not None:
        properties["spec"] = spec
    if status is not None:
        properties["status"] = status
    schema: JSON = {"type": "object", "properties": properties}
    if description:
        schema["description"] = description
    if required:
        schema["required"] = required
    return schema


AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def build_crds(sections: UdnSections | None = None) -> list[JSON]:
    """Every CRD, the UDN/CUDN ones made of ``sections`` (default: every installed
    topology's)."""
    sections = installed_sections() if sections is None else sections
    egress_ip_spec = {"type": "object", "required": ["egressIPs", "namespaceSelector"],
                      "properties": {
                          "egressIPs": {"type": "array", "items": {"type": "string"}},
                          "namespaceSelector": {"type": "object",
                                                "x-kubernetes-preserve-unknown-fields": True},
                          "podSelector": {"type": "object",
                                          "x-kubernetes-preserve-unknown-fields": True}}}
    egress_ip_status = {"type": "object", "properties": {"items": {
        "type": "array", "items": {"type": "object", "required": ["node", "egressIP"],
                                   "properties": {"node": {"type": "string"},
                                                  "egressIP": {"type": "string"}}}}}}
    return [
        crd("k8s.ovn.org", "UserDefinedNetwork", "userdefinednetworks", "userdefinednetwork",
            "Namespaced", "v1",
            root(udn_spec(sections), conditions_status(), ["spec"],
                 "UserDefinedNetwork describe network request for a Namespace."),
            short_names=["udn"],
            printer_columns=[AGE]),
        crd("k8s.ovn.org", "ClusterUserDefinedNetwork", "clusteruserdefinednetworks",
            "clusteruserdefinednetwork", "Cluster", "v1",
            root(cudn_spec(sections), conditions_status(), ["spec"],
                 "ClusterUserDefinedNetwork describe network request for a shared network "
                 "across namespaces."),
            short_names=["cudn"], printer_columns=[AGE]),
        crd("k8s.cni.cncf.io", "NetworkAttachmentDefinition", "network-attachment-definitions",
            "network-attachment-definition", "Namespaced", "v1",
            root({"type": "object", "properties": {"config": {"type": "string"}}}),
            short_names=["net-attach-def"], status=False),
        crd("k8s.ovn.org", "EgressIP", "egressips", "egressip", "Cluster", "v1",
            root(egress_ip_spec, egress_ip_status, ["spec"]), short_names=["eip"],
            printer_columns=[
                {"name": "EgressIPs", "type": "string", "jsonPath": ".spec.egressIPs[*]"},
                {"name": "Assigned Node", "type": "string",
                 "jsonPath": ".status.items[*].node"},
                {"name": "Assigned EgressIPs", "type": "string",
                 "jsonPath": ".status.items[*].egressIP"}]),
        crd("k8s.cni.cncf.io", "IPAMClaim", "ipamclaims", "ipamclaim", "Namespaced", "v1alpha1",
            root({"type": "object", "required": ["network", "interface"], "properties": {
                "network": {"type": "string"}, "interface": {"type": "string"}}},
                {"type": "object", "properties": {
                    "ips": {"type": "array", "items": {"type": "string"}},
                    "ownerPod": {"type": "object", "properties": {"name": {"type": "string"}}},
                    "conditions": conditions_status()["properties"]["conditions"]}},
                ["spec"])),
        # k8snetworkplumbingwg's MultiNetworkPolicy (NetworkPolicy's spec, applied to the
        # secondary networks its k8s.v1.cni.cncf.io/policy-for annotation names)
        crd("k8s.cni.cncf.io", "MultiNetworkPolicy", "multi-networkpolicies",
            "multi-networkpolicy", "Namespaced", "v1beta1",
            root({"type": "object", "required": ["podSelector"],
                  "x-kubernetes-preserve-unknown-fields": True}, None, ["spec"],
                 "MultiNetworkPolicy is a NetworkPolicy for the secondary networks named by "
                 "its k8s.v1.cni.cncf.io/policy-for annotation."),
            short_names=["multi-policy"], status=False),
    ]


def crd_file_name(obj: JSON) -> str:
    return f"{obj['spec']['group']}_{obj['spec']['names']['plural']}.yaml"


def render(obj: JSON) -> str:
    return yaml.safe_dump(obj, sort_keys=False, width=100)


def sections_of(topologies: Sequence[str]) -> UdnSections:
    """The UDN sections of the named topology plugins (loaded as ``--topologies`` would).

    :raises PluginLoadError: one of them is not installed or fails to load.
    """
    return sections_for(load_config({"topologies": ",".join(topologies)}, env={}))


def shipped_sections() -> UdnSections:
    """The sections the checked-in CRD files are built from: the bundled topologies'
    (``config.defaults.BUNDLED_TOPOLOGIES``), never another installed one's."""
    return sections_of(BUNDLED_TOPOLOGIES)


def write_crd_files(directory: Path = CRD_DIR,
                    sections: UdnSections | None = None) -> list[Path]:
    """Write every CRD into ``directory`` (default: the checked-in files, from
    ``shipped_sections``)."""
    sections = shipped_sections() if sections is None else sections
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for obj in build_crds(sections):
        path = directory / crd_file_name(obj)
        path.write_text(render(obj))
        written.append(path)
    kustomization = directory / KUSTOMIZATION
    kustomization.write_text(render_kustomization((p.name for p in written), KUSTOMIZE_COMMENT))
    return [*written, kustomization]


def crd_file_differences(directory: Path = CRD_DIR,
                         sections: UdnSections | None = None) -> list[str]:
    """How the YAML files in ``directory`` differ from what the builders make of
    ``sections`` (default: the checked-in files and ``shipped_sections``); empty: none."""
    sections = shipped_sections() if sections is None else sections
    built = {crd_file_name(obj): render(obj) for obj in build_crds(sections)}
    present = {path.name for path in manifest_files(directory)}
    problems = [f"{name}: missing" for name in sorted(set(built) - present)]
    problems += [f"{name}: not built by ovnk_core.manifests.crds"
                 for name in sorted(present - set(built))]
    problems += [f"{name}: differs from what the builders make" for name in sorted(built)
                 if name in present and (directory / name).read_text() != built[name]]
    if listed_resources(directory) != sorted(built):
        problems.append(f"{KUSTOMIZATION}: does not list exactly the CRD files")
    return problems


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m ovnk_core.manifests.crds",
        description="Write the CustomResourceDefinitions ovnk needs as YAML files. Without "
                    "options: rewrite the checked-in files (ovnk_core/manifests/crds/), whose "
                    "UDN/CUDN topologies are the bundled topology plugins' "
                    f"({', '.join(BUNDLED_TOPOLOGIES)}), whatever else is installed.")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1, naming each file, if the files differ "
                             "from what the builders make")
    parser.add_argument("--dir", type=Path, default=None,
                        help="the directory to write (or check); default: the checked-in "
                             "files")
    parser.add_argument("--topologies", default=None,
                        help="comma-separated topology plugins whose UDN sections the "
                             "UDN/CUDN CRDs offer (as the components' --topologies); needs "
                             "--dir, the checked-in files are the bundled topologies'")
    args = parser.parse_args(argv)
    if args.topologies is not None and args.dir is None:
        parser.error("--topologies needs --dir: the checked-in files are built from the "
                     "bundled topologies only")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    directory = CRD_DIR if args.dir is None else args.dir
    try:
        sections = shipped_sections() if args.topologies is None else sections_of(
            [name.strip() for name in args.topologies.split(",") if name.strip()])
        if args.check:
            problems = crd_file_differences(directory, sections)
            for problem in problems:
                print(f"{directory}/{problem}", file=sys.stderr)
            return 1 if problems else 0
        for written_path in write_crd_files(directory, sections):
            print(written_path)
    except OvnkError as exc:
        print(f"python -m ovnk_core.manifests.crds: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
