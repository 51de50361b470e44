"""The radial memory graph: every chunk, skill, fact and session as a star, time as the radius.

Drawn with a plain ``paintEvent`` over numpy arrays (the layout comes precomputed from the
worker, see :mod:`app.models.journey_model`). Three layers keep it responsive at 10,000 nodes:

* the *ghost* layer: rings, sector labels and, when asked, every chunk that is not in memory
  at the moment shown (faded); cached until the view moves or the filter changes;
* the *live* layer: the chunks and sessions of the moment shown, with their session edges;
  cached until the moment, the filter or the view changes — playback redraws only this, and
  its cost grows with what is visible then, not with the whole history;
* the overlay, drawn on every paint: selection, hover, the selected node's links, labels.

While the user drags or zooms, the last live layer is moved and scaled as a picture and the
real one is redrawn once the gesture settles. Colours for edges are pre-blended with the
background: opaque lines draw about five times faster than translucent ones (measured).

Level of detail: term links are drawn only for the selected or hovered node, or for all
visible nodes once few enough are visible; labels appear once few enough nodes are on screen.
Hit-testing is arithmetic on the arrays, not a scene lookup.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QEvent, QLineF, QPoint, QPointF, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QContextMenuEvent,
    QFont,
    QFontMetrics,
    QHelpEvent,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPainterPath,
    QPaintEvent,
    QPalette,
    QPen,
    QPixmap,
    QResizeEvent,
    QStaticText,
    QTransform,
    QWheelEvent,
)
from PySide6.QtWidgets import QMenu, QToolTip, QWidget

from app.models.journey_model import (
    FACT_NODE,
    MEMORY_NODE,
    SESSION_NODE,
    SKILL_NODE,
    USER_NODE,
    GraphLayout,
    JourneyBundle,
    JourneySelection,
    when,
)
from engine.journey import Item

NODE_COLORS = {
    MEMORY_NODE: QColor("#3b7dd8"),
    USER_NODE: QColor("#e0852e"),
    SESSION_NODE: QColor("#7d8590"),
    SKILL_NODE: QColor("#8e4fc8"),
    FACT_NODE: QColor("#15907f"),
}
# Shapes tell the layers apart without colour: chunks round, sessions diamonds, skills
# squares, facts small rounds.
NODE_SHAPES = {SESSION_NODE: "diamond", SKILL_NODE: "square"}
NODE_SCALE = {SESSION_NODE: 1.35, SKILL_NODE: 1.2, FACT_NODE: 0.8}
# Sessions last, so their markers sit on top of the edges that meet them.
DRAW_ORDER = (FACT_NODE, MEMORY_NODE, USER_NODE, SKILL_NODE, SESSION_NODE)
ACCENT = QColor("#d62f7f")
MIN_ZOOM, MAX_ZOOM = 0.5, 80.0
LINKS_ALL_BELOW = 150  # visible nodes under which every term link is drawn
LABELS_BELOW = 400  # nodes on screen under which labels are placed (those that fit)
LABEL_WIDTH = 220  # px at zoom 1; a label may grow with the zoom up to LABEL_WIDTH_MAX
LABEL_WIDTH_MAX = 640
LABELS_MIN_SCALE = 90  # px: the disc's radius below which no labels are placed
# A session's edge to a chunk more than this far round the circle is drawn along the
# session's ring and then out, not as a chord through the middle.
CURVE_ABOVE = 0.18  # radians
SETTLE_MS = 90
SOURCE_KINDS = {
    "memory": MEMORY_NODE,
    "user": USER_NODE,
    "skills": SKILL_NODE,
    "facts": FACT_NODE,
    "sessions": SESSION_NODE,
}


def blend(a: QColor, b: QColor, t: float) -> QColor:
    """``a`` moved ``t`` of the way towards ``b``, opaque."""
    return QColor(
        round(a.red() + (b.red() - a.red()) * t),
        round(a.green() + (b.green() - a.green()) * t),
        round(a.blue() + (b.blue() - a.blue()) * t),
    )


def _sprite(color: QColor, diameter: float, outline: QColor | None, shape: str) -> QPixmap:
    size = math.ceil(diameter) + 2
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(color)
    painter.setPen(QPen(outline, 1) if outline is not None else Qt.PenStyle.NoPen)
    rect = QRectF(1, 1, diameter, diameter)
    if shape == "diamond":
        painter.translate(rect.center())
        painter.rotate(45)
        side = diameter / math.sqrt(2)
        painter.drawRect(QRectF(-side / 2, -side / 2, side, side))
    elif shape == "square":
        inset = diameter * 0.06
        painter.drawRect(rect.adjusted(inset, inset, -inset, -inset))
    else:
        painter.drawEllipse(rect)
    painter.end()
    return pixmap


@dataclass
class _View:
    width: int
    height: int
    zoom: float
    pan_x: float
    pan_y: float

    @property
    def scale(self) -> float:
        return 0.45 * min(self.width, self.height) * self.zoom

    @property
    def cx(self) -> float:
        return self.width / 2 + self.pan_x

    @property
    def cy(self) -> float:
        return self.height / 2 + self.pan_y


class RadialGraph(QWidget):
    """Click selects (through the shared :class:`JourneySelection`), double-click edits a
    chunk or views a skill or fact, the context menu and Del/Enter edit or delete, the wheel
    zooms about the cursor, a drag pans, 0 fits."""

    editRequested = Signal(str)  # chunk key
    deleteRequested = Signal(str)  # chunk key
    viewRequested = Signal(str)  # skill or fact key
    rendered = Signal()  # a paint finished (benchmarks and tests time it)

    def __init__(
        self, selection: JourneySelection | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.selection = selection if selection is not None else JourneySelection(self)
        self.selection.changed.connect(self._on_selection)
        self.bundle: JourneyBundle | None = None
        self.layout_data: GraphLayout | None = None
        self.position: int | None = None  # None: now
        self.sources = set(SOURCE_KINDS)
        self.filter_text = ""
        self.show_history = False
        self.zoom = 1.0
        self.pan = QPointF(0, 0)
        self.hover = -1
        self._alive = np.zeros(0, dtype=bool)
        self._wanted = np.zeros(0, dtype=bool)  # passes the source filter
        self._match = np.zeros(0, dtype=bool)  # passes the text filter
        self._ghost: tuple[tuple[object, ...], QPixmap] | None = None
        self._live: tuple[tuple[object, ...], QPixmap, _View] | None = None
        self._mask_version = 0
        self._interacting = False
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(SETTLE_MS)
        self._settle.timeout.connect(self._settled)
        self._press: QPointF | None = None
        self._dragged = False
        self._sprites: dict[tuple[object, ...], QPixmap] = {}
        self._labels: dict[tuple[int, int], tuple[QStaticText, int]] = {}
        self._font_metrics: QFontMetrics | None = None
        # What the last live layer drew (tests and benchmarks read them).
        self.baked_labels: list[int] = []
        self.curved_edges = 0
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMinimumSize(160, 140)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)

    def sizeHint(self) -> QSize:
        return QSize(560, 560)

    # -- data ------------------------------------------------------------------------------

    def set_bundle(self, bundle: JourneyBundle) -> None:
        """New journey data; the view (zoom, pan), the moment and the selection are kept."""
        self.bundle = bundle
        self.layout_data = bundle.layout
        self._labels = {}
        self.hover = -1
        self._ghost = None
        self._recompute_masks()

    def set_position(self, position: int | None) -> None:
        """Show memory as it was at timeline ``position`` (None: now)."""
        if position == self.position:
            return
        self.position = position
        self._recompute_alive()

    def set_sources(self, sources: set[str]) -> None:
        self.sources = set(sources)
        self._ghost = None
        self._recompute_masks()

    def set_filter_text(self, text: str) -> None:
        self.filter_text = text.strip().lower()
        self._recompute_masks()

    def set_show_history(self, on: bool) -> None:
        self.show_history = on
        self._ghost = None
        self._invalidate()

    def _now(self) -> int:
        return self.bundle.journey.now if self.bundle is not None else 0

    def _recompute_masks(self) -> None:
        layout = self.layout_data
        if layout is None:
            return
        kinds = {SOURCE_KINDS[s] for s in self.sources if s in SOURCE_KINDS}
        self._wanted = np.isin(layout.kind, list(kinds))
        if self.filter_text:
            needle = self.filter_text
            self._match = np.fromiter(
                (needle in text for text in layout.texts_lower), dtype=bool, count=len(layout)
            )
        else:
            self._match = np.ones(len(layout), dtype=bool)
        self._recompute_alive()

    def _recompute_alive(self) -> None:
        layout = self.layout_data
        if layout is None:
            return
        position = self._now() if self.position is None else self.position
        self._alive = layout.alive(position)
        self._invalidate()

    def _invalidate(self) -> None:
        self._mask_version += 1
        self.update()

    def live_mask(self) -> np.ndarray:
        """Nodes drawn in full: in memory at the moment shown, of a wanted source, matching."""
        return self._alive & self._wanted & self._match

    def ghost_mask(self) -> np.ndarray:
        """Nodes drawn faded, with history shown: of a wanted source, but not in memory at the
        moment shown or not matching the text filter."""
        if not self.show_history:
            return np.zeros_like(self._alive)
        return self._wanted & ~self.live_mask()

    def visible_keys(self) -> list[str]:
        if self.layout_data is None:
            return []
        keys = self.layout_data.keys
        return [keys[i] for i in np.flatnonzero(self.live_mask())]

    # -- geometry --------------------------------------------------------------------------

    def _view(self) -> _View:
        return _View(self.width(), self.height(), self.zoom, self.pan.x(), self.pan.y())

    def screen_pos(self, key: str) -> QPointF | None:
        layout = self.layout_data
        if layout is None or key not in layout.index:
            return None
        view, i = self._view(), layout.index[key]
        return QPointF(view.cx + layout.x[i] * view.scale, view.cy + layout.y[i] * view.scale)

    def _diameter(self, count: int) -> float:
        base = 7.0 if count < 2_000 else 5.0
        return max(3.0, min(16.0, base * (1 + 0.35 * math.log2(max(self.zoom, 1.0)))))

    def node_at(self, pos: QPointF) -> int:
        """Index of the drawn node under ``pos`` (live first, then faded), or -1."""
        layout = self.layout_data
        if layout is None or not len(layout):
            return -1
        view = self._view()
        reach = (self._diameter(int(self.live_mask().sum())) / 2 + 3) ** 2
        for mask in (self.live_mask(), self.ghost_mask()):
            candidates = np.flatnonzero(mask)
            if not len(candidates):
                continue
            dx = view.cx + layout.x[candidates] * view.scale - pos.x()
            dy = view.cy + layout.y[candidates] * view.scale - pos.y()
            d2 = dx * dx + dy * dy
            best = int(np.argmin(d2))
            if d2[best] <= reach:
                return int(candidates[best])
        return -1

    # -- view changes ----------------------------------------------------------------------

    def zoom_by(self, factor: float, anchor: QPointF | None = None) -> None:
        view = self._view()
        anchor = anchor if anchor is not None else QPointF(view.cx, view.cy)
        new_zoom = max(MIN_ZOOM, min(MAX_ZOOM, self.zoom * factor))
        factor = new_zoom / self.zoom
        # Keep the scene point under the anchor where it is.
        self.pan = QPointF(
            anchor.x() - (anchor.x() - view.cx) * factor - self.width() / 2,
            anchor.y() - (anchor.y() - view.cy) * factor - self.height() / 2,
        )
        self.zoom = new_zoom
        self._gesture()

    def pan_by(self, dx: float, dy: float) -> None:
        self.pan += QPointF(dx, dy)
        self._gesture()

    def fit(self) -> None:
        self.zoom = 1.0
        self.pan = QPointF(0, 0)
        self._interacting = False
        self.update()

    def center_on(self, key: str) -> None:
        layout = self.layout_data
        if layout is None or key not in layout.index:
            return
        i, scale = layout.index[key], self._view().scale
        self.pan = QPointF(-layout.x[i] * scale, -layout.y[i] * scale)
        self.update()

    def _gesture(self) -> None:
        self._interacting = True
        self._settle.start()
        self.update()

    def _settled(self) -> None:
        self._interacting = False
        self.update()

    # -- painting --------------------------------------------------------------------------

    def _colors(self) -> tuple[QColor, QColor]:
        palette = self.palette()
        return palette.color(QPalette.ColorRole.Base), palette.color(QPalette.ColorRole.Text)

    def _sprite(self, kind: int, diameter: float, faded: bool) -> QPixmap:
        background, _text = self._colors()
        key = (kind, round(diameter, 1), faded, background.rgb())
        sprite = self._sprites.get(key)
        if sprite is None:
            color = NODE_COLORS[kind]
            fill = blend(color, background, 0.72) if faded else color
            outline = None if faded else blend(color, QColor("black"), 0.3)
            sprite = _sprite(fill, diameter, outline, NODE_SHAPES.get(kind, "circle"))
            self._sprites[key] = sprite
        return sprite

    def _new_pixmap(self) -> QPixmap:
        ratio = self.devicePixelRatioF()
        pixmap = QPixmap(max(1, round(self.width() * ratio)), max(1, round(self.height() * ratio)))
        pixmap.setDevicePixelRatio(ratio)
        return pixmap

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        background, _text = self._colors()
        view = self._view()
        live_key = self._live_key(view)
        if self._live is not None and self._live[0] == live_key:
            painter.drawPixmap(0, 0, self._live[1])
        elif self._interacting and self._live is not None:
            # Mid-gesture: move the last picture; the real one follows when it settles.
            _key, pixmap, old = self._live
            k = view.scale / old.scale
            painter.fillRect(self.rect(), background)
            painter.translate(view.cx - old.cx * k, view.cy - old.cy * k)
            painter.scale(k, k)
            painter.drawPixmap(0, 0, pixmap)
            painter.resetTransform()
        else:
            pixmap = self._render_live(view)
            self._live = (live_key, pixmap, view)
            painter.drawPixmap(0, 0, pixmap)
        self._paint_overlay(painter, view)
        painter.end()
        self.rendered.emit()

    def _live_key(self, view: _View) -> tuple[object, ...]:
        background, _ = self._colors()
        return (
            view.width,
            view.height,
            view.zoom,
            view.pan_x,
            view.pan_y,
            self._mask_version,
            id(self.layout_data),
            background.rgb(),
            self.devicePixelRatioF(),
        )

    def _ghost_key(self, view: _View) -> tuple[object, ...]:
        # The ghost layer shows every faded candidate regardless of the moment, so playback
        # never redraws it: live nodes are painted over their faded selves.
        return (
            view.width,
            view.height,
            view.zoom,
            view.pan_x,
            view.pan_y,
            id(self.layout_data),
            tuple(sorted(self.sources)),
            self.show_history,
            self._colors()[0].rgb(),
            self.devicePixelRatioF(),
        )

    def ring_labels(self) -> list[tuple[float, str]]:
        """The time rings and the label drawn on each: a label already on a ring inside is
        left off (events within one minute would put the same time on every ring)."""
        if self.layout_data is None:
            return []
        seen: set[str] = set()
        rings = []
        for radius, label in self.layout_data.rings:
            rings.append((radius, "" if label in seen else label))
            seen.add(label)
        return rings

    def _render_ghost(self, view: _View) -> QPixmap:
        key = self._ghost_key(view)
        if self._ghost is not None and self._ghost[0] == key:
            return self._ghost[1]
        background, text = self._colors()
        pixmap = self._new_pixmap()
        pixmap.fill(background)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        layout = self.layout_data
        center = QPointF(view.cx, view.cy)
        ring_pen = QPen(blend(background, text, 0.12), 1)
        label_color = blend(background, text, 0.45)
        small = QFont(self.font())
        small.setPointSizeF(max(6.5, small.pointSizeF() * 0.8))
        painter.setFont(small)
        metrics = QFontMetrics(small)
        if layout is not None:
            for radius, label in self.ring_labels():
                r = radius * view.scale
                painter.setPen(ring_pen)
                painter.setBrush(Qt.BrushStyle.NoBrush)
                painter.drawEllipse(center, r, r)
                painter.setPen(label_color)
                width = metrics.horizontalAdvance(label)
                painter.drawText(QPointF(view.cx - width / 2, view.cy - r - 3), label)
            painter.setFont(self._sector_font())
            painter.setPen(label_color)
            ascent = QFontMetrics(self._sector_font()).ascent()
            for left, top, _right, bottom, name in self._sector_boxes(view):
                painter.drawText(QPointF(left + 2, (top + bottom) / 2 + ascent / 2 - 1), name)
            if self.show_history:
                # Every candidate, live ones too (they are painted over): the layer then
                # does not depend on the moment shown.
                self._draw_nodes(painter, view, np.flatnonzero(self._wanted), faded=True)
        painter.end()
        self._ghost = (key, pixmap)
        return pixmap

    def _render_live(self, view: _View) -> QPixmap:
        ghost = self._render_ghost(view)
        pixmap = QPixmap(ghost)  # implicitly shared until painted on: one copy, no redraw
        layout = self.layout_data
        if layout is None or not len(layout):
            return pixmap
        background, text = self._colors()
        painter = QPainter(pixmap)
        live = self.live_mask()
        shown = np.flatnonzero(live)
        sx = view.cx + layout.x * view.scale
        sy = view.cy + layout.y * view.scale
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, len(shown) < 3_000)
        if len(layout.tree):
            both = live[layout.tree[:, 0]] & live[layout.tree[:, 1]]
            self._draw_tree(painter, view, sx, sy, layout.tree[both], blend(background, text, 0.2))
        if len(layout.links) and len(shown) <= LINKS_ALL_BELOW:
            both = live[layout.links[:, 0]] & live[layout.links[:, 1]]
            color = blend(background, NODE_COLORS[MEMORY_NODE], 0.16)
            self._draw_edges(painter, sx, sy, layout.links[both], color)
        self._draw_nodes(painter, view, shown, faded=False)
        self._bake_labels(painter, view, live)
        painter.end()
        return pixmap

    def _draw_tree(
        self,
        painter: QPainter,
        view: _View,
        sx: np.ndarray,
        sy: np.ndarray,
        pairs: np.ndarray,
        color: QColor,
    ) -> None:
        """Session → chunk edges. Most join neighbours (a session sits over its chunks) and
        stay straight lines, drawn in one call; the few that reach far round the circle run
        along the session's ring and then out to the chunk, so they never cut across the
        disc, and edges from one session to one sector share that arc (a bundle)."""
        if not len(pairs):
            return
        straight, path, curved = self._route(view, sx, sy, pairs)
        self.curved_edges = curved
        self._draw_edges(painter, sx, sy, straight, color)
        if curved:
            painter.setPen(QPen(color, 1))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawPath(path)

    def _route(
        self, view: _View, sx: np.ndarray, sy: np.ndarray, pairs: np.ndarray
    ) -> tuple[np.ndarray, QPainterPath, int]:
        """Split ``pairs`` into those drawn straight and a path for the rest: an edge with a
        session at one end reaching more than :data:`CURVE_ABOVE` round the circle goes
        along the session's ring, then straight out to the other end."""
        assert self.layout_data is not None
        path = QPainterPath()
        if not len(pairs):
            return pairs, path, 0
        kind = self.layout_data.kind
        dx, dy = sx - view.cx, sy - view.cy
        theta = np.arctan2(dx, -dy)  # 0 at the top, clockwise, as the layout lays it out
        radius = np.hypot(dx, dy)
        a, b = pairs[:, 0], pairs[:, 1]
        b_is_session = kind[b] == SESSION_NODE
        session = np.where(b_is_session, b, a)
        other = np.where(b_is_session, a, b)
        has_session = (kind[a] == SESSION_NODE) | b_is_session
        turn = (theta[other] - theta[session] + math.pi) % (2 * math.pi) - math.pi
        far = has_session & (np.abs(turn) > CURVE_ABOVE)
        for s_i, o_i, sweep in zip(
            session[far].tolist(), other[far].tolist(), turn[far].tolist(), strict=True
        ):
            r = float(radius[s_i])
            path.moveTo(float(sx[s_i]), float(sy[s_i]))
            start = 90.0 - math.degrees(float(theta[s_i]))
            path.arcTo(QRectF(view.cx - r, view.cy - r, 2 * r, 2 * r), start, -math.degrees(sweep))
            path.lineTo(float(sx[o_i]), float(sy[o_i]))
        return pairs[~far], path, int(far.sum())

    @staticmethod
    def _draw_edges(
        painter: QPainter, sx: np.ndarray, sy: np.ndarray, pairs: np.ndarray, color: QColor
    ) -> None:
        if not len(pairs):
            return
        painter.setPen(QPen(color, 1))
        a, b = pairs[:, 0], pairs[:, 1]
        coords = np.column_stack((sx[a], sy[a], sx[b], sy[b])).tolist()
        painter.drawLines([QLineF(x1, y1, x2, y2) for x1, y1, x2, y2 in coords])

    def _draw_nodes(
        self, painter: QPainter, view: _View, indices: np.ndarray, *, faded: bool
    ) -> None:
        layout = self.layout_data
        if layout is None or not len(indices):
            return
        diameter = self._diameter(len(indices))
        for kind in DRAW_ORDER:
            chosen = indices[layout.kind[indices] == kind]
            if not len(chosen):
                continue
            size = diameter * NODE_SCALE.get(kind, 1.0)
            sprite = self._sprite(kind, size, faded)
            half = sprite.width() / 2 / sprite.devicePixelRatio()
            xs = (view.cx + layout.x[chosen] * view.scale - half).tolist()
            ys = (view.cy + layout.y[chosen] * view.scale - half).tolist()
            draw = painter.drawPixmap
            for x, y in zip(xs, ys, strict=True):
                draw(QPointF(x, y), sprite)

    def _paint_overlay(self, painter: QPainter, view: _View) -> None:
        layout = self.layout_data
        if layout is None or not len(layout):
            if self.bundle is None:
                painter.setPen(self._colors()[1])
                painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "Loading memory…")
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        selected = layout.index.get(self.selection.key, -1)
        drawn = self.live_mask() | self.ghost_mask()
        if selected >= 0 and not drawn[selected]:
            # Selected, but not in memory at the moment shown (or filtered out): the
            # selection stays, unmarked, until the node is drawn again.
            selected = -1
        diameter = self._diameter(int(self.live_mask().sum()))
        if selected >= 0:
            self._paint_links(painter, view, selected, ACCENT)
        for index, width in ((self.hover, 1.5), (selected, 2.5)):
            if index < 0:
                continue
            point = QPointF(
                view.cx + layout.x[index] * view.scale, view.cy + layout.y[index] * view.scale
            )
            painter.setPen(QPen(ACCENT, width))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            r = diameter / 2 + 3.5
            painter.drawEllipse(point, r, r)
        self._paint_labels(painter, view, selected)

    def _paint_links(self, painter: QPainter, view: _View, index: int, color: QColor) -> None:
        layout = self.layout_data
        assert layout is not None
        drawn = self.live_mask() | self.ghost_mask()
        pen = QPen(color, 1.4)
        for pairs, style in (
            (layout.tree, Qt.PenStyle.SolidLine),
            (layout.links, Qt.PenStyle.DashLine),
        ):
            if not len(pairs):
                continue
            touching = pairs[(pairs[:, 0] == index) | (pairs[:, 1] == index)]
            touching = touching[drawn[touching[:, 0]] & drawn[touching[:, 1]]]
            pen.setStyle(style)
            painter.setPen(pen)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            sx = view.cx + layout.x * view.scale
            sy = view.cy + layout.y * view.scale
            # The selection's sessions are routed as the tree's edges are: round, not across.
            straight, path, curved = self._route(view, sx, sy, touching)
            for a, b in straight.tolist():
                painter.drawLine(QPointF(sx[a], sy[a]), QPointF(sx[b], sy[b]))
            if curved:
                painter.drawPath(path)

    def label_width(self) -> int:
        """How wide a label may be: more room as the view zooms in, in steps of 60 px so the
        label cache is not rebuilt on every wheel notch; never much wider than the disc is
        across (in a small dock a label would cover the graph it names)."""
        wanted = LABEL_WIDTH * max(1.0, self.zoom) ** 0.75
        width = min(LABEL_WIDTH_MAX, LABEL_WIDTH + (wanted - LABEL_WIDTH) // 60 * 60)
        disc = self._view().scale
        return int(max(60, min(width, disc // 60 * 60 + 60)))

    def _label(self, index: int) -> tuple[QStaticText, int]:
        """Node ``index``'s label, elided, laid out once per journey and width (a static
        text draws several times faster than laying the string out again on every paint)."""
        width = self.label_width()
        cached = self._labels.get((index, width))
        if cached is None:
            assert self.layout_data is not None
            metrics = self._metrics()
            text = metrics.elidedText(
                self.layout_data.labels[index], Qt.TextElideMode.ElideRight, width
            )
            static = QStaticText(text)
            static.setTextFormat(Qt.TextFormat.PlainText)
            static.prepare(QTransform(), self.font())
            cached = (static, metrics.horizontalAdvance(text))
            self._labels[(index, width)] = cached
        return cached

    def _metrics(self) -> QFontMetrics:
        if self._font_metrics is None:
            self._font_metrics = QFontMetrics(self.font())
        return self._font_metrics

    def _label_box(self, view: _View, index: int) -> tuple[float, float, float, float, QStaticText]:
        """Where node ``index``'s label goes: (left, top, right, bottom, text). Labels point
        away from the centre so they do not cover the rings inside."""
        assert self.layout_data is not None
        text, width = self._label(index)
        height = self._metrics().height()
        x = view.cx + float(self.layout_data.x[index]) * view.scale
        y = view.cy + float(self.layout_data.y[index]) * view.scale
        if self.layout_data.kind[index] == SESSION_NODE:
            # Centred above (or, in the lower half, below) the diamond: its chunks' labels
            # take the sides.
            half = self._diameter(1) * NODE_SCALE[SESSION_NODE] / 2 + 2
            top = y - half - height if y <= view.cy else y + half
            left = x - width / 2
            return left - 2, top, left + width + 2, top + height, text
        left = x - width - 8 if x < view.cx else x + 8
        return left - 2, y - height / 2, left + width + 2, y + height / 2, text

    def _sector_boxes(self, view: _View) -> list[tuple[float, float, float, float, str]]:
        assert self.layout_data is not None
        metrics = QFontMetrics(self._sector_font())
        boxes = []
        for angle, name in self.layout_data.sectors:
            r = view.scale + 14
            x, y = view.cx + r * math.sin(angle), view.cy - r * math.cos(angle)
            width = metrics.horizontalAdvance(name)
            half = metrics.height() / 2
            boxes.append((x - width / 2 - 2, y - half, x + width / 2 + 2, y + half, name))
        return boxes

    def _sector_font(self) -> QFont:
        bold = QFont(self.font())
        bold.setBold(True)
        bold.setPointSizeF(max(6.5, bold.pointSizeF() * 0.85))
        return bold

    def _bake_labels(self, painter: QPainter, view: _View, live: np.ndarray) -> None:
        """Labels of the visible nodes that fit without overlapping, drawn into the live
        layer: greedy, chunks before sessions, with a coarse grid for the overlap test."""
        layout = self.layout_data
        assert layout is not None
        sx = view.cx + layout.x * view.scale
        sy = view.cy + layout.y * view.scale
        on_screen = live & (sx >= 0) & (sx <= view.width) & (sy >= 0) & (sy <= view.height)
        chosen = np.flatnonzero(on_screen)
        self.baked_labels = []
        # A disc under ~180 px across has no room for names; hovering still shows them.
        if not len(chosen) or len(chosen) > LABELS_BELOW or view.scale < LABELS_MIN_SCALE:
            return
        cell = 48.0
        grid: dict[tuple[int, int], list[tuple[float, float, float, float]]] = {}

        def cells(box: tuple[float, float, float, float]) -> list[tuple[int, int]]:
            return [
                (cx, cy)
                for cx in range(int(box[0] // cell), int(box[2] // cell) + 1)
                for cy in range(int(box[1] // cell), int(box[3] // cell) + 1)
            ]

        def free(box: tuple[float, float, float, float]) -> bool:
            for key in cells(box):
                for other in grid.get(key, ()):
                    if (
                        box[0] < other[2]
                        and other[0] < box[2]
                        and box[1] < other[3]
                        and other[1] < box[3]
                    ):
                        return False
            return True

        def take(box: tuple[float, float, float, float]) -> None:
            for key in cells(box):
                grid.setdefault(key, []).append(box)

        for sector in self._sector_boxes(view):
            take(sector[:4])
        _background, text_color = self._colors()
        painter.setFont(self.font())
        painter.setPen(text_color)
        # Sessions first: there are few, and a diamond without a name says nothing.
        order = sorted(chosen.tolist(), key=lambda i: (layout.kind[i] != SESSION_NODE, i))
        for i in order:
            *box, label = self._label_box(view, i)
            rect = (box[0], box[1], box[2], box[3])
            if not free(rect):
                continue
            take(rect)
            self.baked_labels.append(i)
            painter.drawStaticText(QPointF(rect[0] + 2, rect[1]), label)

    def _paint_labels(self, painter: QPainter, view: _View, selected: int) -> None:
        """The selection's and the hover's labels, on a backing so they read over the rest."""
        background, text = self._colors()
        painter.setFont(self.font())
        for i in dict.fromkeys((self.hover, selected)):
            if i < 0:
                continue
            left, top, right, bottom, label = self._label_box(view, i)
            backing = QColor(background)
            backing.setAlpha(225)
            painter.fillRect(QRectF(left, top, right - left, bottom - top), backing)
            painter.setPen(ACCENT if i == selected else text)
            painter.drawStaticText(QPointF(left + 2, top), label)

    # -- interaction -----------------------------------------------------------------------

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.PaletteChange):
            self._labels = {}
            self._font_metrics = None
            self._ghost = None
            self._live = None
            self.update()
        super().changeEvent(event)

    def resizeEvent(self, event: QResizeEvent) -> None:
        self._ghost = None
        super().resizeEvent(event)

    def _on_selection(self, _key: str) -> None:
        self.update()

    def key_at(self, pos: QPointF) -> str:
        index = self.node_at(pos)
        return self.layout_data.keys[index] if index >= 0 and self.layout_data else ""

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self._press = event.position()
            self._dragged = False
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._press is not None and event.buttons() & Qt.MouseButton.LeftButton:
            delta = event.position() - self._press
            if self._dragged or abs(delta.x()) + abs(delta.y()) > 3:
                self._dragged = True
                self._press = event.position()
                self.pan_by(delta.x(), delta.y())
            return
        hover = self.node_at(event.position())
        if hover != self.hover:
            self.hover = hover
            self.update()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton and self._press is not None:
            if not self._dragged:
                self.selection.select(self.key_at(event.position()))
            self._press = None
            self._dragged = False
        super().mouseReleaseEvent(event)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        key = self.key_at(event.position())
        if key and self._editable(key):
            self.selection.select(key)
            self.editRequested.emit(key)
        elif key and self._viewable(key):
            self.selection.select(key)
            self.viewRequested.emit(key)

    def leaveEvent(self, event: QEvent) -> None:
        if self.hover >= 0:
            self.hover = -1
            self.update()
        super().leaveEvent(event)

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120
        if steps:
            self.zoom_by(1.2**steps, event.position())
        event.accept()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        selected = self.selection.key
        if key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom_by(1.25)
        elif key == Qt.Key.Key_Minus:
            self.zoom_by(1 / 1.25)
        elif key == Qt.Key.Key_0:
            self.fit()
        elif key == Qt.Key.Key_Delete and self._editable(selected):
            self.deleteRequested.emit(selected)
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self._editable(selected):
            self.editRequested.emit(selected)
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self._viewable(selected):
            self.viewRequested.emit(selected)
        else:
            super().keyPressEvent(event)
            return
        event.accept()

    def _editable(self, key: str) -> bool:
        """Only chunks in memory now can be edited or deleted."""
        if not key or self.bundle is None:
            return False
        chunk = self.bundle.journey.chunk(key)
        return chunk is not None and chunk.alive

    def _viewable(self, key: str) -> bool:
        """Every chunk can be viewed (its versions and sessions); skills and facts are shown,
        not edited, from here (skills change through ``cairn skills`` and the agent, facts
        through the fact store)."""
        if not key or self.bundle is None:
            return False
        journey = self.bundle.journey
        return journey.item(key) is not None or journey.chunk(key) is not None

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        key = self.key_at(QPointF(event.pos()))
        if not key:
            return
        self.selection.select(key)
        menu = QMenu(self)
        if self._viewable(key):
            menu.addAction("View…").triggered.connect(lambda: self.viewRequested.emit(key))
        edit = menu.addAction("Edit…")
        delete = menu.addAction("Delete…")
        editable = self._editable(key)
        edit.setEnabled(editable)
        delete.setEnabled(editable)
        menu.addSeparator()
        menu.addAction("Centre here").triggered.connect(lambda: self.center_on(key))
        edit.triggered.connect(lambda: self.editRequested.emit(key))
        delete.triggered.connect(lambda: self.deleteRequested.emit(key))
        menu.popup(event.globalPos())

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            assert isinstance(event, QHelpEvent)
            text = self.tooltip_at(QPointF(event.pos()))
            if text:
                QToolTip.showText(event.globalPos(), text, self)
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().event(event)

    def tooltip_at(self, pos: QPointF | QPoint) -> str:
        key = self.key_at(QPointF(pos))
        if not key or self.bundle is None:
            return ""
        return self.tooltip_for(key)

    def tooltip_for(self, key: str) -> str:
        """First line, source and times of a chunk; title, time and chunk count of a session."""
        assert self.bundle is not None
        journey = self.bundle.journey
        chunk = journey.chunk(key)
        if chunk is not None:
            position = self._now() if self.position is None else self.position
            text = chunk.text_at(position) or chunk.text
            line = text.split("\n", 1)[0]
            line = line if len(line) <= 90 else line[:89] + "…"
            parts = [line, f"{chunk.target.filename} · learned {when(chunk.learned_at)}"]
            if chunk.changed_at and chunk.changed_at != chunk.learned_at:
                parts.append(f"changed {when(chunk.changed_at)}")
            if chunk.removed_at is not None:
                parts.append(f"removed {when(chunk.removed_at)}")
            if chunk.session_id:
                session = next((s for s in journey.sessions if s.id == chunk.session_id), None)
                title = session.title if session and session.title else chunk.session_id[:8]
                parts.append(f"session: {title}")
            if chunk.node_id:
                parts.append(chunk.node_id)
            return "\n".join(parts)
        item = journey.item(key)
        if item is not None:
            return self._item_tooltip(item)
        session = next((s for s in journey.sessions if "s:" + s.id == key), None)
        if session is None:
            return ""
        taught = sum(1 for c in journey.chunks if c.session_id == session.id)
        return "\n".join(
            [
                session.title or f"session {session.id[:8]}",
                f"session · started {when(session.started_at)}",
                f"{taught} chunk{'s' if taught != 1 else ''} learned",
            ]
        )

    def _item_tooltip(self, item: Item) -> str:
        assert self.bundle is not None
        position = self._now() if self.position is None else self.position
        text = item.text_at(position) or item.text
        if item.layer == "skill":
            parts = [item.subject]
            if item.title:
                parts.append(item.title if len(item.title) <= 90 else item.title[:89] + "…")
            level = f" · {item.trust_level}" if item.trust_level else ""
            parts.append(f"skill{level} · learned {when(item.learned_at)}")
        else:
            line = text.split("\n", 1)[0]
            parts = [line if len(line) <= 90 else line[:89] + "…"]
            trust = f" · trust {item.trust:.2f}" if item.trust is not None else ""
            parts.append(f"fact{trust} · learned {when(item.learned_at)}")
            if item.entities:
                parts.append("about " + ", ".join(item.entities[:6]))
        if item.changed_at and item.changed_at != item.learned_at:
            parts.append(f"changed {when(item.changed_at)}")
        if item.removed_at is not None:
            parts.append(f"removed {when(item.removed_at)}")
        if item.session_id:
            journey = self.bundle.journey
            session = next((s for s in journey.sessions if s.id == item.session_id), None)
            title = session.title if session and session.title else item.session_id[:8]
            parts.append(f"session: {title}")
        if item.node_id:
            parts.append(item.node_id)
        return "\n".join(parts)
