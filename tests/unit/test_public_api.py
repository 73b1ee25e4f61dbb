"""What the docs tell plugin authors to use exists.

``docs/plugins/public-api.md`` lists the modules of ``ovnk_core`` that are the plugin API
(its table): each must import and have every name listed.  Every
``ovnk_core...`` reference anywhere in ``docs/`` must name a module or a module's
attribute, so a rename cannot leave the guides pointing at nothing.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
GUIDE = DOCS / "plugins" / "public-api.md"
ROW = re.compile(r"^\| `(ovnk_core[\w.]*)` \| (.+) \|$")
REFERENCE = re.compile(r"\bovnk_core(?:\.\w+)+")


def public_api() -> dict[str, list[str]]:
    """Module → names, from the guide's table."""
    text = GUIDE.read_text()
    section = text.split("# The public API", 1)[1]
    table = {}
    for line in section.splitlines():
        match = ROW.match(line)
        if match:
            table[match.group(1)] = re.findall(r"`(\w+)`", match.group(2))
    return table


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or an attribute of the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def test_the_guide_lists_the_public_api() -> None:
    table = public_api()
    assert len(table) >= 30
    assert {"ovnk_core", "ovnk_core.contexts", "ovnk_core.feature", "ovnk_core.topology",
            "ovnk_core.kube.controller", "ovnk_core.ovn.declarative"} <= set(table)
    assert all(names for names in table.values())


@pytest.mark.parametrize("module", sorted(public_api()))
def test_every_public_name_is_importable(module: str) -> None:
    imported = importlib.import_module(module)
    missing = [name for name in public_api()[module] if not hasattr(imported, name)]
    assert missing == [], f"{module} lacks {missing}"


def test_every_ovnk_core_reference_in_the_docs_resolves() -> None:
    broken = sorted({f"{path.name}: {ref}" for path in DOCS.rglob("*.md")
                     for ref in REFERENCE.findall(path.read_text())
                     if not resolves(ref)})
    assert broken == []
