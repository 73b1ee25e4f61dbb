#!/usr/bin/env python3
"""Draw the docs' pictures (``docs/img/``) from a real ``ovnk local`` run.

Runs every ``<!-- doc-test: run -->`` block of the docs, as ``tests/e2e/test_docs_commands.py``
does, in its own directory (``--dir``, default ``.docs-pictures``): a cluster comes up and
the pages' examples are applied.  Then, for each topology page, it writes what
``ovnk show network NAME --format dot`` prints (``docs/img/NAME.dot``) and the SVG Graphviz
draws from it (stamped with the ``.dot``'s digest, which ``tests/unit/test_docs_pictures.py``
checks), and the reachability matrix of the workshop's pods (``ovnk reachability --format
json``, ``docs/img/reachability.json``) with its picture, the one the docs' own
``ovnk reachability --output`` block drew (``reachability.svg``); then it takes the cluster
down.  Run it with the virtualenv's Python after a change to what ovnk renders, and commit
``docs/img/``:

    .venv/bin/python scripts/docs_pictures.py [--dir DIR]

Needs what ``ovnk local up`` needs (root for the real dataplane) and Graphviz's ``dot``
(``apt-get install graphviz``); the tests need neither.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import docs_examples as ex

ROOT = ex.ROOT
IMG = ROOT / "docs" / "img"
OVNK = ROOT / ".venv" / "bin" / "ovnk"


@dataclass(frozen=True)
class Picture:
    name: str  # docs/img/NAME.dot and NAME.svg
    network: str  # what `ovnk show network` is given
    page: str  # the page that shows it


TOPOLOGIES = (
    Picture("layer3-blue", "blue/blue-network", "features/layer3.md"),
    Picture("layer2-vms", "vms/vm-network", "features/layer2.md"),
    Picture("localnet-physnet1-vlan10", "physnet1-vlan10", "features/localnet.md"),
)
# The workshop's six pods (blue, green, teal): labelled `network`.
REACHABILITY_ARGS = ("-l", "network", "--wait", "60")
STAMP = re.compile(r"<!-- drawn by scripts/docs_pictures\.py from (\S+) sha256:([0-9a-f]{64}) -->")

MAC = re.compile(r"\b(?:[0-9a-f]{2}:){5}[0-9a-f]{2}\b")
IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?:/\d+)?\b")
NODE = re.compile(r"ovn-worker\d*")


def shape_of(dot: str) -> list[str]:
    """A topology's lines without what depends on timing: pod MACs and IPs, and which node
    each pod landed on (the scheduler's choice).  Anything else that changes is drift."""
    lines = []
    for line in dot.splitlines():
        line = NODE.sub("NODE", IPV4.sub("IP", MAC.sub("MAC", line)))
        lines.append(line)
    return sorted(lines)


def verdicts_of(matrix_json: str) -> dict[str, object]:
    """What a reachability matrix says, without the pods' addresses."""
    matrix = json.loads(matrix_json)
    return {"pods": [(p["pod"], p["network"]) for p in matrix["pods"]],
            "reachable": sorted(tuple(pair) for pair in matrix["reachable"]),
            "errors": sorted(matrix["errors"]), "probe": matrix["probe"]}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def stamp_svg(svg: str, dot_name: str, dot: str) -> str:
    """The SVG with a comment naming the ``.dot`` it was drawn from and its digest."""
    stamp = f"<!-- drawn by scripts/docs_pictures.py from {dot_name} sha256:{digest(dot)} -->"
    head, sep, rest = svg.partition("<svg")
    return f"{head}{stamp}\n{sep}{rest}"


def reachability_svg(matrix_json: str) -> str:
    """The matrix picture as ``ovnk reachability --output`` draws it, from its JSON."""
    from ovnk_core.reachability.endpoints import Endpoint
    from ovnk_core.reachability.matrix import Matrix
    from ovnk_core.reachability.render import render_svg

    data = json.loads(matrix_json)
    endpoints = [Endpoint(pod=p["pod"], network=p["network"], port="", switch="", mac="",
                          ip=p["ip"], router_mac="", note=p.get("note", ""))
                 for p in data["pods"]]
    matrix = Matrix(endpoints, data["probe"]["protocol"], data["probe"]["port"])
    for source, destination in data["reachable"]:
        matrix.verdicts[(source, destination)] = True
    names = [e.pod for e in endpoints]
    for source in names:
        for destination in names:
            if source != destination:
                matrix.verdicts.setdefault((source, destination), False)
    for pair, message in data["errors"].items():
        source, destination = pair.split(" -> ", 1)
        matrix.verdicts.pop((source, destination), None)
        matrix.errors[(source, destination)] = message
    return render_svg(matrix)


def ovnk(kubeconfig: Path, *args: str) -> str:
    return subprocess.run([str(OVNK), *args, "--kubeconfig", str(kubeconfig)], check=True,
                          text=True, capture_output=True, timeout=120,
                          env=ex.reader_environment(dict(os.environ))).stdout


def draw(workdir: Path) -> None:
    kubeconfig = workdir / ".ovnk" / "kubeconfig"
    IMG.mkdir(parents=True, exist_ok=True)
    for picture in TOPOLOGIES:
        dot = ovnk(kubeconfig, "show", "network", picture.network, "--format", "dot")
        svg = subprocess.run(["dot", "-Tsvg"], input=dot, text=True, capture_output=True,
                             check=True).stdout
        (IMG / f"{picture.name}.dot").write_text(dot)
        (IMG / f"{picture.name}.svg").write_text(stamp_svg(svg, f"{picture.name}.dot", dot))
        print(f"wrote docs/img/{picture.name}.dot and .svg")
    # The picture the reader's block drew (ovnk reachability --output reachability.svg, the
    # workshop's six pods), and the same pods' matrix as JSON, from which the unit test draws
    # it again.
    shutil.copyfile(workdir / "reachability.svg", IMG / "reachability.svg")
    matrix = ovnk(kubeconfig, "reachability", *REACHABILITY_ARGS, "--format", "json")
    (IMG / "reachability.json").write_text(matrix)
    if reachability_svg(matrix) != (IMG / "reachability.svg").read_text():
        raise SystemExit("docs_pictures: the matrix of the workshop's pods differs from the "
                         "one the docs' block drew")
    print("wrote docs/img/reachability.svg (the docs' block's) and reachability.json")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=ROOT / ".docs-pictures",
                        help="where the run happens (removed first when an earlier run made it)")
    args = parser.parse_args()
    if shutil.which("dot") is None:
        print("docs_pictures: Graphviz's dot is missing: apt-get install graphviz",
              file=sys.stderr)
        return 2
    workdir = args.dir.resolve()
    if (workdir / ".ovnk" / "cluster.json").exists():
        shutil.rmtree(workdir)
    ex.prepare_workdir(workdir)
    steps = workdir / ".doc-steps"
    steps.mkdir(exist_ok=True)
    blocks, teardown = ex.runnable_blocks()
    script, _ = ex.run_script(blocks, steps)
    env = ex.reader_environment(dict(os.environ))
    try:
        result = subprocess.run(["bash", "-c", script], cwd=workdir, env=env, text=True,
                                capture_output=True)
        if result.returncode != 0:
            print(result.stdout[-4000:], result.stderr[-4000:], sep="\n", file=sys.stderr)
            print("docs_pictures: a docs block failed; nothing drawn", file=sys.stderr)
            return 1
        draw(workdir)
    finally:
        subprocess.run(["bash", "-c", ex.teardown_script(teardown)], cwd=workdir, env=env,
                       capture_output=True, timeout=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
