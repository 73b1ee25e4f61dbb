"""The matrix for people: a text table, an SVG picture, or a PNG of that picture.

Rows are sources and columns destinations, grouped by network, so isolated
networks show as green blocks on the diagonal and red everywhere else.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from ovnk_core.errors import OvnkError
from ovnk_core.reachability.matrix import Matrix

YES, NO, ERROR, SELF = "✓", "✗", "?", "·"
CELL, PAD, CHAR, TITLE = 28, 12, 7.2, 40
PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#ff7f0e")


def _mark(matrix: Matrix, src: str, dst: str) -> str:
    if src == dst:
        return SELF
    if (src, dst) in matrix.errors:
        return ERROR
    return YES if matrix.allowed(src, dst) else NO


def describe_probe(matrix: Matrix) -> str:
    if matrix.protocol == "icmp":
        return "ICMP echo"
    return f"{matrix.protocol.upper()} port {matrix.port}"


def render_text(matrix: Matrix) -> str:
    """A table: one row per source pod, one column per destination (numbered)."""
    ordered = matrix.ordered()
    lines = [f"Reachability ({describe_probe(matrix)}), from ovn-trace: "
             f"{YES} delivered, {NO} dropped"]
    labels = [f"{e.pod} [{e.network}]" + (f" ({e.note})" if e.note else "") for e in ordered]
    width = max([len(label) + 1 for label in labels] + [10])
    header = " " * (width + 4) + " ".join(f"{i + 1:>2}" for i in range(len(ordered)))
    lines.append(header)
    for i, src in enumerate(ordered):
        label = labels[i]
        cells = " ".join(f"{_mark(matrix, src.pod, dst.pod):>2}" for dst in ordered)
        lines.append(f"{i + 1:>2}  {label:<{width}}{cells}")
    for (source, destination), error in sorted(matrix.errors.items()):
        lines.append(f"  {source} → {destination}: trace failed: {error}")
    return "\n".join(lines) + "\n"


def render_svg(matrix: Matrix) -> str:
    ordered = matrix.ordered()
    groups = matrix.groups()
    n = len(ordered)
    longest = max(len(e.pod) for e in ordered)
    label = int(longest * CHAR) + 16  # row labels on the left
    header = TITLE + int(longest * CHAR * 0.87) + 16  # column labels rotated by 60 degrees
    title = f"Pod reachability ({describe_probe(matrix)}) — ovn-trace verdicts"
    width = int(max(label + n * CELL + longest * CHAR * 0.5, len(title) * 8.5,
                    max(len(name) for name, _ in groups) * CHAR + 90)) + 2 * PAD
    height = header + n * CELL + 2 * PAD + 24 * len(groups) + 16
    colour = {name: PALETTE[i % len(PALETTE)] for i, (name, _) in enumerate(groups)}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{PAD}" y="{PAD + 14}" font-size="15" font-weight="bold">'
           f'{escape(title)}</text>']
    x0, y0 = PAD + label, PAD + header
    for index, endpoint in enumerate(ordered):
        fill = colour[endpoint.network]
        y = y0 + index * CELL + CELL * 0.65
        out.append(f'<text x="{x0 - 6}" y="{y:.1f}" text-anchor="end" fill="{fill}">'
                   f'{escape(endpoint.pod)}</text>')
        x = x0 + index * CELL + CELL * 0.65
        out.append(f'<text x="{x:.1f}" y="{y0 - 6}" fill="{fill}" '
                   f'transform="rotate(-60 {x:.1f} {y0 - 6})">{escape(endpoint.pod)}</text>')
    for row, src in enumerate(ordered):
        for col, dst in enumerate(ordered):
            mark = _mark(matrix, src.pod, dst.pod)
            fill = {YES: "#b7e4c7", NO: "#f4b6b6", ERROR: "#ffe08a", SELF: "#eeeeee"}[mark]
            x, y = x0 + col * CELL, y0 + row * CELL
            out.append(f'<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" fill="{fill}" '
                       'stroke="white"/>')
            out.append(f'<text x="{x + CELL / 2}" y="{y + CELL * 0.68:.1f}" '
                       f'text-anchor="middle">{mark}</text>')
    start = 0
    for name, items in groups:  # a frame around each network's block
        x, y, size = x0 + start * CELL, y0 + start * CELL, len(items) * CELL
        out.append(f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="none" '
                   f'stroke="{colour[name]}" stroke-width="2.5"/>')
        start += len(items)
    legend_y = y0 + n * CELL + 30
    for index, (name, items) in enumerate(groups):
        y = legend_y + index * 24
        out.append(f'<rect x="{PAD}" y="{y - 10}" width="12" height="12" '
                   f'fill="{colour[name]}"/>')
        out.append(f'<text x="{PAD + 18}" y="{y}">network {escape(name)} '
                   f'({len(items)} pod{"s" if len(items) != 1 else ""})</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_picture(matrix: Matrix, path: Path) -> None:
    """Write ``path`` as SVG, or as PNG (through cairosvg) when it ends in ``.png``."""
    svg = render_svg(matrix)
    suffix = path.suffix.lower()
    if suffix == ".svg":
        path.write_text(svg, encoding="utf-8")
    elif suffix == ".png":
        import cairosvg  # type: ignore[import-untyped]

        cairosvg.svg2png(bytestring=svg.encode(), write_to=str(path))
    else:
        raise OvnkError(f"--output {path}: use a .svg or .png file name")
