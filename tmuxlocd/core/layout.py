"""tmux ``window_layout`` strings: parsing, formatting and pane neighbours (sans-I/O).

A layout string is ``CSUM,BODY`` where ``CSUM`` is four lowercase hex digits (tmux's 16-bit
checksum of ``BODY``) and ``BODY`` is one cell::

    cell  := W "x" H "," X "," Y ( "," PANE | "{" cells "}" | "[" cells "]" )
    cells := cell ( "," cell )*

``{}`` holds cells side by side (left to right), ``[]`` holds cells stacked (top to bottom);
``PANE`` is the number N of the pane id ``%N``.  Neighbouring cells are separated by exactly one
border cell.  The format is tmux's own (``layout-custom.c``); tmux >= 3.2 always writes the pane
number on leaves, so a leaf without one is rejected rather than guessed at.

Since 3.7 a window may also hold **floating panes**, written after the tiled tree as
``<leaf,leaf,...>`` (topmost first; the checksum covers that part too), with offsets that may
be negative.  tmux also leaves each floating pane's cell *inside* the tree, where it does not
tile (``layout.c``: 3.7 appends it to the root split, next-3.8 puts it beside the pane it was
made from), and while the window is zoomed the saved layout keeps those cells with no ``<...>``
at all.  ``parse_window_layout`` and ``tiled_boxes`` therefore tell the tiled panes from the
floating ones by the section *and* by geometry: a cell that does not tile its split floats.

``parse_layout`` is strict about tiled layouts: it accepts exactly the strings tmux writes, so
for every accepted string ``format_layout(parse_layout(s)) == s``.  Everything is iterative
(no recursion), so no input can raise ``RecursionError``; every failure is a
:class:`~tmuxlocd.core.errors.LayoutError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Final, Literal

import msgspec

from tmuxlocd.core.errors import LayoutError

__all__ = [
    "DIRECTIONS",
    "MAX_DEPTH",
    "Box",
    "Direction",
    "LayoutCell",
    "Neighbor",
    "Rect",
    "WindowLayout",
    "adjacency",
    "box_adjacency",
    "format_layout",
    "layout_checksum",
    "leaf_boxes",
    "neighbors",
    "neighbors_of_layout",
    "pane_rects",
    "parse_layout",
    "parse_window_layout",
    "tiled_boxes",
]

Direction = Literal["above", "below", "left", "right"]
DIRECTIONS: tuple[Direction, ...] = ("above", "below", "left", "right")

# Splits nest alternately and every level costs at least two cells, so real layouts stay far
# below this; the limit only bounds the work done for hostile input (and keeps msgspec's
# recursive equality/hash on the resulting tree safe).
MAX_DEPTH: Final = 256

# tmux prints every number with %u, so each fits in 32 bits and has no leading zero.
_UINT_MAX: Final = 0xFFFFFFFF
_NUM: Final = r"(0|[1-9][0-9]{0,9})"
_HEAD_RE: Final = re.compile(_NUM + "x" + _NUM + "," + _NUM + "," + _NUM)
_PANE_RE: Final = re.compile("," + _NUM)
_CSUM_RE: Final = re.compile(r"[0-9a-f]{4},")
# Floating panes' cells (3.7+): offsets are printed with %d, so they may be negative.
_INT: Final = r"(0|-?[1-9][0-9]{0,9})"
_FLOAT_HEAD_RE: Final = re.compile(_NUM + "x" + _NUM + "," + _INT + "," + _INT)
_FLOAT_LEAF_RE: Final = re.compile(r"(\d+)x(\d+),(-?\d+),(-?\d+),(\d+)(?![\d{\[x])")
# A leaf: a cell's head and its pane number, which no digit, opener or ``x`` follows (a
# pre-1.8 leaf, which has no number, would otherwise read its next cell's width as one).
_LEAF_RE: Final = re.compile(r"(\d+)x(\d+),(\d+),(\d+),(\d+)(?![\d{\[x])")
# A whole layout string as a run of its tokens: cell heads with their pane number or
# opener, separators and closers (no nesting, no geometry: leaf_boxes says why).
_TOKENS_RE: Final = re.compile(r"[0-9a-f]{4},(?:\d+x\d+,\d+,\d+(?:,\d+(?![\dx])|[{\[])|[,}\]])+")
_CLOSER: Final = {"lr": "}", "tb": "]"}
_OPENER: Final = {"lr": "{", "tb": "["}


class Rect(msgspec.Struct, frozen=True):
    """A pane's rectangle in cells, as tmux's ``pane_left/top/width/height``."""

    left: int
    top: int
    width: int
    height: int


class LayoutCell(msgspec.Struct, frozen=True):
    """One node of the layout tree: a pane (leaf) or a split holding child cells."""

    width: int
    height: int
    left: int
    top: int
    kind: Literal["pane", "lr", "tb"]  # "lr" = {} left-right split, "tb" = [] top-bottom split
    pane: int | None  # N of %N for leaves, None for splits
    children: tuple[LayoutCell, ...] = ()


class Neighbor(msgspec.Struct, frozen=True):
    """A pane across one border from another; ``shared`` is the common edge length in cells."""

    pane: int
    shared: int


def layout_checksum(body: str) -> int:
    """tmux's checksum of a layout body: rotate right by one bit, add the byte, 16 bits."""
    csum = 0
    # Layout bodies are ASCII; other text is summed over its UTF-8 bytes so that the function
    # is total (such a body never parses anyway).
    for byte in body.encode("utf-8", "surrogatepass"):
        # One expression (the rotation's halves never overlap, so | is +): a new layout is
        # summed on every split and kill.
        csum = ((csum >> 1) + ((csum & 1) << 15) + byte) & 0xFFFF
    return csum


def _excerpt(text: str, pos: int) -> str:
    """A short quoted piece of ``text`` around ``pos`` for error messages."""
    start = max(0, pos - 20)
    piece = text[start : pos + 20]
    return f"{'…' if start else ''}{piece!r}{'…' if pos + 20 < len(text) else ''}"


class _Frame:
    """A split cell whose children are still being read."""

    __slots__ = ("children", "height", "kind", "left", "top", "width")

    def __init__(
        self, kind: Literal["lr", "tb"], width: int, height: int, left: int, top: int
    ) -> None:
        self.kind: Literal["lr", "tb"] = kind
        self.width = width
        self.height = height
        self.left = left
        self.top = top
        self.children: list[LayoutCell] = []


def _uint(text: str, body: str, pos: int) -> int:
    value = int(text)
    if value > _UINT_MAX:
        raise LayoutError(f"number {text} at offset {pos} exceeds 32 bits: {_excerpt(body, pos)}")
    return value


def _parse_body(body: str, *, signed: bool = False) -> LayoutCell:
    """``signed``: offsets may be negative (floating cells, 3.7+)."""
    head_re = _FLOAT_HEAD_RE if signed else _HEAD_RE
    stack: list[_Frame] = []
    seen: set[int] = set()
    pos = 0
    end = len(body)
    while True:
        # A cell starts here: its head, then either its pane number or a split's opener.
        head = head_re.match(body, pos)
        if head is None:
            raise LayoutError(
                f"expected a cell 'WxH,X,Y' at offset {pos} of the layout body: "
                f"{_excerpt(body, pos)}"
            )
        pos = head.end()
        width, height, left, top = map(int, head.groups())
        if max(width, height, abs(left), abs(top)) > _UINT_MAX:  # the message names the number
            for i in range(1, 5):
                _uint(head.group(i), body, head.start(i))
        nxt = body[pos] if pos < end else ""
        if nxt in ("{", "["):
            if len(stack) >= MAX_DEPTH:
                raise LayoutError(f"layout nests splits deeper than {MAX_DEPTH} levels")
            stack.append(_Frame("lr" if nxt == "{" else "tb", width, height, left, top))
            pos += 1
            continue
        number = _PANE_RE.match(body, pos)
        if number is None:
            raise LayoutError(
                f"leaf cell ending at offset {pos} has no pane number (',N', '{{' or '[' "
                f"expected): {_excerpt(body, pos)}"
            )
        pos = number.end()
        if pos < end and body[pos] == "x":
            raise LayoutError(
                f"leaf cell before offset {number.start()} has no pane number (pre-1.8 "
                f"layout format): {_excerpt(body, pos)}"
            )
        digits = number.group(1)
        pane = int(digits) if len(digits) < 10 else _uint(digits, body, number.start(1))
        if pane in seen:
            raise LayoutError(f"pane %{pane} appears twice in the layout")
        seen.add(pane)
        node = LayoutCell(width, height, left, top, "pane", pane)
        # Hand the finished cell to its parent; close every split that ends here.
        while True:
            if not stack:
                if pos != end:
                    raise LayoutError(
                        f"unexpected text after the layout at offset {pos}: {_excerpt(body, pos)}"
                    )
                return node
            frame = stack[-1]
            frame.children.append(node)
            nxt = body[pos] if pos < end else ""
            if nxt == ",":
                pos += 1
                break
            if nxt == _CLOSER[frame.kind]:
                pos += 1
                stack.pop()
                node = LayoutCell(
                    frame.width,
                    frame.height,
                    frame.left,
                    frame.top,
                    frame.kind,
                    None,
                    tuple(frame.children),
                )
                continue
            raise LayoutError(
                f"expected ',' or {_CLOSER[frame.kind]!r} at offset {pos} of the layout body: "
                f"{_excerpt(body, pos)}"
            )


def _check_geometry(root: LayoutCell) -> None:
    """Children of a split must tile it exactly, one border cell apart (tmux's layout_check)."""
    stack = [root]
    while stack:
        cell = stack.pop()
        if cell.kind == "pane":
            continue
        across = cell.kind == "lr"
        pos = cell.left if across else cell.top
        for child in cell.children:
            if across:
                ok = child.top == cell.top and child.height == cell.height and child.left == pos
                pos = child.left + child.width + 1
            else:
                ok = child.left == cell.left and child.width == cell.width and child.top == pos
                pos = child.top + child.height + 1
            if not ok:
                raise LayoutError(
                    f"cell {_cell_head(child)} does not fit its parent split "
                    f"{_cell_head(cell)}{_OPENER[cell.kind]}…"
                )
            stack.append(child)
        size = cell.left + cell.width if across else cell.top + cell.height
        if pos - 1 != size:
            raise LayoutError(
                f"children of split {_cell_head(cell)}{_OPENER[cell.kind]}… do not add up "
                f"to its {'width' if across else 'height'}"
            )


def _cell_head(cell: LayoutCell) -> str:
    return f"{cell.width}x{cell.height},{cell.left},{cell.top}"


def _checked_body(layout: str) -> str:
    """The body of a layout string (what follows ``CSUM,``), its checksum verified."""
    if not isinstance(layout, str):
        raise LayoutError(f"layout must be a string, not {type(layout).__name__}")
    if _CSUM_RE.match(layout) is None:
        raise LayoutError(
            "layout must start with a 4-digit lowercase hex checksum and a comma: "
            f"{_excerpt(layout, 0)}"
        )
    body = layout[5:]
    stated = int(layout[:4], 16)
    actual = layout_checksum(body)
    if stated != actual:
        raise LayoutError(
            f"layout checksum mismatch: the string says {stated:04x}, its body sums to "
            f"{actual:04x}: {_excerpt(layout, 0)}"
        )
    return body


def parse_layout(layout: str, *, check_geometry: bool = True) -> LayoutCell:
    """Parse a tmux ``window_layout`` string into its cell tree.

    The checksum is verified.  With ``check_geometry`` (the default) the children of every
    split must also tile it exactly with one-cell borders, which tmux's own layouts always do;
    neighbour computation relies on it.  Raises :class:`LayoutError` on anything else.
    """
    body = _checked_body(layout)
    root = _parse_body(body)
    if check_geometry:
        _check_geometry(root)
    return root


class WindowLayout(msgspec.Struct, frozen=True):
    """A window's layout split into its tiled tree (None when every pane floats) and its
    floating panes' cells, topmost first (those the ``<...>`` section lists, in its order,
    then those only geometry shows: a zoomed window's, or one tmux left out)."""

    tiled: LayoutCell | None
    floating: tuple[LayoutCell, ...]


def _leaf_cells(cell: LayoutCell) -> list[LayoutCell]:
    out: list[LayoutCell] = []
    todo = [cell]
    while todo:
        one = todo.pop()
        if one.pane is not None:
            out.append(one)
        else:
            todo.extend(reversed(one.children))
    return out


def _fits(child: LayoutCell, cell: LayoutCell, pos: int) -> bool:
    if cell.kind == "lr":
        return child.top == cell.top and child.height == cell.height and child.left == pos
    return child.left == cell.left and child.width == cell.width and child.top == pos


def _untile(root: LayoutCell, floating: set[int]) -> tuple[LayoutCell | None, list[LayoutCell]]:
    """The tree without its floating cells, and the leaves dropped (in tree order).

    A leaf floats when ``floating`` names it or when it does not tile its split: it is not
    where the split's previous child ends (one border further), or does not span the split
    across.  Post-order and iterative: a split's children are settled before the split."""
    dropped: list[LayoutCell] = []
    done: dict[int, LayoutCell | None] = {}
    todo: list[tuple[LayoutCell, bool]] = [(root, False)]
    while todo:
        cell, expanded = todo.pop()
        if cell.pane is not None:
            if cell.pane in floating:
                dropped.append(cell)
                done[id(cell)] = None
            else:
                done[id(cell)] = cell
            continue
        if not expanded:
            todo.append((cell, True))
            todo.extend((child, False) for child in reversed(cell.children))
            continue
        kept: list[LayoutCell] = []
        across = cell.kind == "lr"
        pos = cell.left if across else cell.top
        for child in cell.children:
            got = done.pop(id(child))
            if got is None:
                continue
            if not _fits(got, cell, pos):
                dropped.extend(_leaf_cells(got))
                continue
            kept.append(got)
            pos = got.left + got.width + 1 if across else got.top + got.height + 1
        if not kept:
            done[id(cell)] = None
        elif len(kept) == len(cell.children) and all(
            k is c for k, c in zip(kept, cell.children, strict=True)
        ):
            done[id(cell)] = cell
        else:
            done[id(cell)] = msgspec.structs.replace(cell, children=tuple(kept))
    return done[id(root)], dropped


def parse_window_layout(layout: str) -> WindowLayout:
    """Parse any ``window_layout`` tmux writes, floating panes (3.7+) included.

    The checksum covers the whole string after ``CSUM,``.  The tiled tree that remains once
    the floating cells are out must tile exactly (``parse_layout``'s geometry check); a
    ``LayoutError`` otherwise.
    """
    body = _checked_body(layout)
    tree, mark, section = body.partition("<")
    listed: list[LayoutCell] = []
    if mark:
        if not section.endswith(">"):
            raise LayoutError(f"floating section does not end with '>': {_excerpt(layout, 0)}")
        listed = _split_floating(section[:-1], layout)
    root = _parse_body(tree, signed=True)
    ids = {cell.pane for cell in listed if cell.pane is not None}
    if len(ids) != len(listed):
        raise LayoutError(f"a pane appears twice in the floating section: {_excerpt(layout, 0)}")
    tiled, dropped = _untile(root, ids)
    if tiled is not None:
        _check_geometry(tiled)
    extra = tuple(cell for cell in dropped if cell.pane not in ids)
    return WindowLayout(tiled, (*listed, *extra))


def _split_floating(section: str, layout: str) -> list[LayoutCell]:
    cells: list[LayoutCell] = []
    pos = 0
    while True:
        head = _FLOAT_HEAD_RE.match(section, pos)
        number = _PANE_RE.match(section, head.end()) if head is not None else None
        if head is None or number is None:
            raise LayoutError(f"expected a floating pane 'WxH,X,Y,N': {_excerpt(layout, 0)}")
        width, height = _uint(head[1], section, 0), _uint(head[2], section, 0)
        left, top = int(head[3]), int(head[4])
        pane = _uint(number[1], section, 0)
        cells.append(LayoutCell(width, height, left, top, "pane", pane))
        pos = number.end()
        if pos == len(section):
            return cells
        if section[pos] != ",":
            raise LayoutError(f"expected ',' in the floating section: {_excerpt(layout, 0)}")
        pos += 1


def format_layout(root: LayoutCell) -> str:
    """Write a cell tree as tmux does, checksum included."""
    out: list[str] = []
    todo: list[LayoutCell | str] = [root]
    depth = 0  # number of open splits, to refuse hand-built trees nested absurdly deep
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            out.append(item)
            if item in ("}", "]"):
                depth -= 1
            continue
        head = _cell_head(item)
        if item.kind == "pane":
            if item.pane is None or item.children:
                raise LayoutError(f"pane cell {head} needs a pane number and no children")
            out.append(f"{head},{item.pane}")
            continue
        if item.kind not in _CLOSER or item.pane is not None or not item.children:
            raise LayoutError(f"split cell {head} needs kind lr/tb, children and no pane number")
        depth += 1
        if depth > MAX_DEPTH:
            raise LayoutError(f"layout nests splits deeper than {MAX_DEPTH} levels")
        out.append(head + _OPENER[item.kind])
        todo.append(_CLOSER[item.kind])
        # Pushed in reverse so that they pop in order: child0 "," child1 "," ... childN.
        for i in range(len(item.children) - 1, -1, -1):
            todo.append(item.children[i])
            if i:
                todo.append(",")
    body = "".join(out)
    return f"{layout_checksum(body):04x},{body}"


def pane_rects(root: LayoutCell) -> dict[int, Rect]:
    """Pane number -> its rectangle, in layout order (left to right, top to bottom)."""
    rects: dict[int, Rect] = {}
    todo = [root]
    while todo:
        cell = todo.pop()
        if cell.pane is not None:
            rects[cell.pane] = Rect(cell.left, cell.top, cell.width, cell.height)
        else:
            todo.extend(reversed(cell.children))
    return rects


# A pane's rectangle as (pane, left, top, right, bottom), right and bottom exclusive.
Box = tuple[int, int, int, int, int]


def leaf_boxes(layout: str) -> list[Box]:
    """The panes' boxes of a layout string as tmux writes it, read straight off its leaves.

    This is the Locations' path, run on every split and kill: a leaf is the one kind of
    cell whose head ``WxH,X,Y`` is followed by ``,N``, so one scan finds every pane without
    building the tree.  It checks that the string is made of layout tokens (else
    ``LayoutError``) but not the checksum, the nesting or the geometry, which every string
    tmux writes has right (``parse_layout`` checks them all, at about three times the cost).
    For every string ``parse_layout`` accepts, the boxes are ``pane_rects``' rectangles in
    the same order (tests/unit/test_neighbors.py checks it on captured and random layouts).
    """
    if _TOKENS_RE.fullmatch(layout) is None:
        raise LayoutError(f"not a layout string: {_excerpt(layout, 0)}")
    boxes: list[Box] = []
    for w, h, x, y, n in _LEAF_RE.findall(layout, 5):
        left, top = int(x), int(y)
        boxes.append((int(n), left, top, left + int(w), top + int(h)))
    return boxes


def tiled_boxes(layout: str) -> tuple[list[Box], list[Box]]:
    """(the tiled panes' boxes, the floating panes' boxes) of any layout string tmux writes.

    The Locations' path: a layout with no floating pane is read by ``leaf_boxes`` (one scan)
    and proven to tile by area alone: in a tiling each leaf with its right and bottom border
    covers ``(w+1)*(h+1)`` cells and the leaves cover the root's ``(W+1)*(H+1)`` exactly, so a
    floating cell left in the tree (a zoomed window's) shows as cells counted twice.  Any other
    string goes through ``parse_window_layout``.  ``LayoutError`` when neither can read it.
    """
    if "<" not in layout and _TOKENS_RE.fullmatch(layout) is not None:
        boxes = leaf_boxes(layout)
        root = _HEAD_RE.match(layout, 5)
        if root is not None:
            covered = sum((r - x + 1) * (b - y + 1) for _, x, y, r, b in boxes)
            if covered == (int(root[1]) + 1) * (int(root[2]) + 1):
                return boxes, []
    parsed = parse_window_layout(layout)
    tiled = [] if parsed.tiled is None else _boxes(_leaf_cells(parsed.tiled))
    return tiled, _boxes(list(parsed.floating))


def _boxes(cells: list[LayoutCell]) -> list[Box]:
    return [
        (c.pane, c.left, c.top, c.left + c.width, c.top + c.height)
        for c in cells
        if c.pane is not None
    ]


Adjacent = tuple[
    list[tuple[int, int]], list[tuple[int, int]], list[tuple[int, int]], list[tuple[int, int]]
]


def adjacency(rects: Mapping[int, Rect]) -> dict[int, Adjacent]:
    """For every pane, its (above, below, left, right) lists of ``(-shared, pane)``, sorted:
    largest shared length first, then by pane number.  ``neighbors`` reads them as
    ``Neighbor``s; the Location's neighbours (location.pane_neighbors) as pane ids.

    Two panes are neighbours when exactly one border cell separates them (for ``right``:
    ``other.left == r.left + r.width + 1``) and their ranges along that edge overlap by at
    least one cell.  Panes touching only at a corner are not neighbours (tmux's own
    ``{up-of}`` etc. also accept those).
    """
    return box_adjacency(
        [(p, r.left, r.top, r.left + r.width, r.top + r.height) for p, r in rects.items()]
    )


def box_adjacency(boxes: list[Box]) -> dict[int, Adjacent]:
    """``adjacency`` of the panes' boxes (``leaf_boxes``)."""
    # Plain tuples and lists in the loop: attribute access on Structs would dominate, and
    # tuples sort without a key function.  Panes are bucketed by their left and top
    # coordinates, so each pane only meets the panes that start one border past its right or
    # bottom edge (no all-pairs scan).
    found: dict[int, Adjacent] = {p: ([], [], [], []) for p, *_ in boxes}
    by_left: dict[int, list[tuple[int, int, int, int, int]]] = {}
    by_top: dict[int, list[tuple[int, int, int, int, int]]] = {}
    for box in boxes:
        by_left.setdefault(box[1], []).append(box)
        by_top.setdefault(box[2], []).append(box)
    for a, al, at, ar, ab in boxes:
        a_lists = found[a]
        # Right and bottom ends are exclusive, so the border column is ar and row is ab.
        # Cheap overlap test first: most panes in a bucket lie elsewhere along the border.
        # A pane of height or width 0 (tmux can leave one after shrinking a window) overlaps
        # nothing along that edge: ``shared`` must be at least one cell.
        for b, _, bt, _, bb in by_left.get(ar + 1, ()):
            if bt < ab and at < bb:
                shared = min(ab, bb) - max(at, bt)
                if shared > 0:
                    a_lists[3].append((-shared, b))
                    found[b][2].append((-shared, a))
        for b, bl, _, br, _ in by_top.get(ab + 1, ()):
            if bl < ar and al < br:
                shared = min(ar, br) - max(al, bl)
                if shared > 0:
                    a_lists[1].append((-shared, b))
                    found[b][0].append((-shared, a))
    for lists in found.values():
        for one in lists:
            if len(one) > 1:
                one.sort()
    return found


def neighbors(rects: Mapping[int, Rect]) -> dict[int, dict[Direction, tuple[Neighbor, ...]]]:
    """For every pane and direction, the panes across that edge, largest shared length first
    (``adjacency``).  All four keys are always present."""
    return {
        p: {
            d: tuple(Neighbor(n, -s) for s, n in one)
            for d, one in zip(DIRECTIONS, lists, strict=True)
        }
        for p, lists in adjacency(rects).items()
    }


@lru_cache(maxsize=1024)
def neighbors_of_layout(layout: str) -> dict[int, dict[Direction, tuple[Neighbor, ...]]]:
    """The tiled panes' ``neighbors`` (``parse_window_layout``: a floating pane has none and
    changes no tiled pane's), cached by layout string.

    The same dict is returned for the same string, so callers must not modify it.
    """
    tiled = parse_window_layout(layout).tiled
    return {} if tiled is None else neighbors(pane_rects(tiled))
