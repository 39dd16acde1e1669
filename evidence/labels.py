# SPDX-License-Identifier: GPL-2.0-only
"""Where a plot's short labels go so that none covers another: placed, moved, merged or thinned.

Why: the expected packets of a burst sit a fraction of a millisecond apart, and their line
labels (``L44``, ``L46`` …) drawn at each box land on top of each other, an unreadable smear
exactly where a person looks first. The rule here is plain and deterministic (the same input
always gives the same picture, so tests compare structure, not pixels):

1. the strong labels (the failing line) are placed first, each alone;
2. every other label tries a few spots around its anchor, inside the plot area;
3. a label with no free spot merges with the group it collides with, and the group is
   abbreviated to its range of lines (``L44–56``); a group that still finds no free spot (it
   collides only with a strong label) is thinned out: left unlabelled, and counted.

Sizes are estimated from the font size (a character is about 0.62 em wide), with no renderer:
the page renders the SVG text in the reader's browser font anyway.
"""

from dataclasses import dataclass, field

CHAR_EM = 0.62  # width of one label character, as a fraction of the font size
GAP = 2.0  # pixels between an anchor and its label


@dataclass(frozen=True)
class Box:
    """A rectangle in pixels (y grows upwards, as in matplotlib's display coordinates)."""

    left: float
    bottom: float
    width: float
    height: float

    def overlaps(self, other: "Box") -> bool:
        return (
            self.left < other.left + other.width
            and other.left < self.left + self.width
            and self.bottom < other.bottom + other.height
            and other.bottom < self.bottom + self.height
        )

    def inside(self, area: "Box") -> bool:
        return (
            self.left >= area.left
            and self.bottom >= area.bottom
            and self.left + self.width <= area.left + area.width
            and self.bottom + self.height <= area.bottom + area.height
        )


@dataclass(frozen=True)
class Anchor:
    """Where a label wants to be (pixels), the script line it names, and whether it is strong."""

    line: int
    x: float
    y: float
    strong: bool = False


@dataclass(frozen=True)
class Placed:
    text: str
    box: Box
    lines: tuple[int, ...]
    strong: bool


@dataclass
class Layout:
    placed: list[Placed] = field(default_factory=list)
    thinned: list[int] = field(default_factory=list)  # lines left unlabelled


def label_text(lines: list[int]) -> str:
    """``L44`` for one line, ``L44–56`` for a group (first and last line of the group)."""
    first, last = min(lines), max(lines)
    return f"L{first}" if first == last else f"L{first}–{last}"


def text_size(text: str, font_px: float) -> tuple[float, float]:
    return len(text) * CHAR_EM * font_px + 2, font_px * 1.25


def _spots(anchor_x: float, anchor_y: float, width: float, height: float) -> list[Box]:
    """Candidate boxes around an anchor: above right first (where a reader expects a label),
    then below, then to the left, then stacked higher above."""
    right, left = anchor_x + GAP, anchor_x - GAP - width
    above, below = anchor_y + GAP, anchor_y - GAP - height
    return [
        Box(right, above, width, height),
        Box(right, below, width, height),
        Box(left, above, width, height),
        Box(left, below, width, height),
        Box(right, above + height + GAP, width, height),
        Box(left, above + height + GAP, width, height),
    ]


def _place(
    anchors: list[Anchor], text: str, font_px: float, area: Box, taken: list[Box]
) -> tuple[Box | None, list[Box]]:
    """The first free spot for a group's label (at its first anchor), or None and the boxes
    its spots collided with, nearest spot first."""
    width, height = text_size(text, font_px)
    first = anchors[0]
    collided: list[Box] = []
    for spot in _spots(first.x, first.y, width, height):
        if not spot.inside(area):
            continue
        hits = [box for box in taken if box.overlaps(spot)]
        if not hits:
            return spot, []
        collided += hits
    return None, collided


def place(anchors: list[Anchor], font_px: float, area: Box) -> Layout:
    """Non-overlapping labels for *anchors* inside *area* (see the module's rule)."""
    layout = Layout()
    for anchor in sorted((a for a in anchors if a.strong), key=lambda a: a.line):
        text = label_text([anchor.line])
        spot, _ = _place([anchor], text, font_px, area, [p.box for p in layout.placed])
        if spot is None:  # even a strong label must not cover another: keep its box honest
            layout.thinned.append(anchor.line)
            continue
        layout.placed.append(Placed(text, spot, (anchor.line,), True))
    strong = list(layout.placed)
    groups = [[a] for a in sorted((a for a in anchors if not a.strong), key=lambda a: (a.x, a.y))]
    while True:
        placed: list[tuple[int, Placed]] = []  # (its group, the label)
        merged = False
        for index, group in enumerate(groups):
            lines = [a.line for a in group]
            taken = [p.box for p in strong] + [p.box for _, p in placed]
            spot, hits = _place(group, label_text(lines), font_px, area, taken)
            if spot is not None:
                placed.append((index, Placed(label_text(lines), spot, tuple(sorted(lines)), False)))
                continue
            owner = next((g for box in hits for g, p in placed if p.box is box), None)
            if owner is None:  # only a strong label (or the edge) is in the way: thin it out
                layout.thinned += lines
            else:
                groups[owner] = sorted(groups[owner] + group, key=lambda a: (a.x, a.y))
                merged = True
            groups[index] = []
            if merged:
                break
        groups = [g for g in groups if g]
        if not merged:
            layout.placed = strong + [p for _, p in placed]
            layout.thinned.sort()
            return layout
