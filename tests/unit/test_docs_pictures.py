"""The checked-in pictures (``docs/img/``) are what the code draws, and the pages show them.

``scripts/docs_pictures.py`` writes them from a real ``ovnk local`` run; the docs e2e test
(``tests/e2e/test_docs_commands.py``) compares the ``.dot`` files and the matrix with what its
cluster renders.  Here, without a cluster: each Graphviz SVG was drawn from the ``.dot`` beside
it (its stamp carries the ``.dot``'s digest), and the matrix picture is exactly what ovnk's
renderer draws from the checked-in matrix today, so a change to either leaves them stale and
fails.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest

from ovnk_core.testing.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
IMG = ROOT / "docs" / "img"


def _load(name: str) -> ModuleType:
    return load_script(ROOT / "scripts" / f"{name}.py")


pictures = _load("docs_pictures")
STALE = "stale: run scripts/docs_pictures.py and commit docs/img/"


@pytest.mark.parametrize("picture", pictures.TOPOLOGIES, ids=lambda p: p.name)
def test_each_topology_svg_was_drawn_from_the_dot_beside_it(picture: object) -> None:
    name = picture.name  # type: ignore[attr-defined]
    dot = (IMG / f"{name}.dot").read_text()
    stamp = pictures.STAMP.search((IMG / f"{name}.svg").read_text())
    assert stamp is not None, f"docs/img/{name}.svg has no stamp: {STALE}"
    assert stamp.groups() == (f"{name}.dot", pictures.digest(dot)), f"docs/img/{name}.svg {STALE}"


@pytest.mark.parametrize("picture", pictures.TOPOLOGIES, ids=lambda p: p.name)
def test_each_topology_page_shows_its_picture_and_its_network(picture: object) -> None:
    page = (ROOT / "docs" / picture.page).read_text()  # type: ignore[attr-defined]
    assert f"../img/{picture.name}.svg" in page  # type: ignore[attr-defined]
    dot = (IMG / f"{picture.name}.dot").read_text()  # type: ignore[attr-defined]
    assert dot.startswith("graph "), "the .dot is ovnk show network --format dot's output"


def test_the_matrix_picture_is_what_ovnk_draws_from_the_checked_in_matrix() -> None:
    drawn = pictures.reachability_svg((IMG / "reachability.json").read_text())
    assert (IMG / "reachability.svg").read_text() == drawn, f"docs/img/reachability.svg {STALE}"
    assert "../img/reachability.svg" in (
        ROOT / "docs" / "getting-started" / "what-was-rendered.md").read_text()


def test_the_workshop_matrix_keeps_networks_apart() -> None:
    verdicts = pictures.verdicts_of((IMG / "reachability.json").read_text())
    network = dict(verdicts["pods"])  # type: ignore[arg-type]
    assert len(network) == 6 and verdicts["errors"] == []
    reachable = set(verdicts["reachable"])  # type: ignore[arg-type]
    expected = {(a, b) for a in network for b in network if a != b and network[a] == network[b]}
    assert reachable == expected


def test_a_stale_svg_is_found() -> None:
    svg = pictures.stamp_svg("<?xml?>\n<svg>x</svg>\n", "a.dot", "graph a {}\n")
    stamp = pictures.STAMP.search(svg)
    assert stamp is not None and stamp.group(2) == pictures.digest("graph a {}\n")
    assert stamp.group(2) != pictures.digest("graph a { b; }\n")


def test_the_shape_of_a_topology_ignores_addresses_and_placement_but_not_rows() -> None:
    one = ('  "blue_blue.network_ovn-worker" -- "pod";\n'
           '  "pod" [label="pod blue/blue: 0a:58:67:67:00:03 103.103.0.3"];\n')
    other = ('  "blue_blue.network_ovn-worker2" -- "pod";\n'
             '  "pod" [label="pod blue/blue: 0a:58:67:67:01:04 103.103.1.4"];\n')
    assert pictures.shape_of(one) == pictures.shape_of(other)
    renamed = one.replace("blue_blue.network_", "blue_blue_")
    assert pictures.shape_of(one) != pictures.shape_of(renamed)


IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def test_every_picture_a_page_shows_exists() -> None:
    """mkdocs --strict checks links between pages, not the files images point at."""
    pages = [*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    shown = [(page, target) for page in pages
             for target in IMAGE.findall(page.read_text(encoding="utf-8"))]
    assert shown, "no page shows a picture"
    missing = [f"{page.relative_to(ROOT)}: {target}" for page, target in shown
               if not (page.parent / target).is_file()]
    assert missing == []
