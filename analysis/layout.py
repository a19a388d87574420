"""Text on the figures that never overlaps: numeric tick labels thinned where neighbours would
collide, value labels kept inside their axes, dot labels placed beside their dots where there is room
(else a number there and the label in a key under the axes). `drawn_texts` and `overlaps` let a
test check a drawn figure the way a reader sees it."""
import contextlib
import math

import matplotlib.text
from matplotlib import ticker

# The smallest text a figure draws, in points.
MIN_FONT = 7
# Pixels two texts may share before they count as overlapping (antialiased edges touch).
TOUCH = 1.0


@contextlib.contextmanager
def recording_texts():
    """Yields a list that collects (Text, box in pixels) for every non-empty text drawn meanwhile."""
    drawn = []
    original = matplotlib.text.Text.draw

    def draw(self, renderer):
        original(self, renderer)
        if self.get_visible() and self.get_text().strip():
            drawn.append((self, self.get_window_extent(renderer)))

    matplotlib.text.Text.draw = draw
    try:
        yield drawn
    finally:
        matplotlib.text.Text.draw = original


def drawn_texts(fig):
    """(Text, box) of every text the figure draws: titles, tick labels, legends, annotations."""
    with recording_texts() as drawn:
        fig.canvas.draw()
    return drawn


def boxes_overlap(a, b, touch=TOUCH):
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > touch) and (min(a.y1, b.y1) - max(a.y0, b.y0) > touch)


def overlaps(drawn):
    """Pairs of drawn texts whose boxes overlap, as (text, text)."""
    out = []
    boxes = sorted(drawn, key=lambda tb: tb[1].x0)
    for i, (ta, a) in enumerate(boxes):
        for tb, b in boxes[i + 1:]:
            if b.x0 - a.x1 > 0:
                break
            if boxes_overlap(a, b):
                out.append((ta.get_text(), tb.get_text()))
    return out


# ---------------------------------------------------------------------------------------------------
# Tick labels


def _tick_priority(axis, loc, index, count):
    """Which tick labels survive thinning first: decades on a log axis, then the two ends, then in order."""
    decade = axis.get_scale() == "log" and loc > 0 and abs(math.log10(loc) - round(math.log10(loc))) < 1e-9
    end = index in (0, count - 1)
    return (0 if decade else 1, 0 if end else 1, index)


def name_ticks(axis, positions, names, fontsize):
    """Ticks that name what sits at them (bars, lanes): thin_tick_labels never drops one."""
    axis.set_ticks(list(positions))
    axis.set_ticklabels(list(names), fontsize=fontsize)
    axis.aggsim_names = True


def thin_tick_labels(fig, pad=8.0):
    """Drops numeric tick labels that would overlap a kept neighbour (sizes such as 26 MB beside
    26.3 MB); ticks that name things (name_ticks) are never dropped. Returns how many were dropped."""
    renderer = fig.canvas.get_renderer()
    fig.canvas.draw()
    dropped = 0
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if getattr(axis, "aggsim_names", False) or isinstance(axis.get_major_formatter(), ticker.FixedFormatter):
                continue
            ticks = [t for t in axis._update_ticks() if t.label1.get_visible() and t.label1.get_text().strip()]
            if len(ticks) < 2:
                continue
            boxes = [t.label1.get_window_extent(renderer).expanded(1, 1).padded(pad / 2) for t in ticks]
            order = sorted(range(len(ticks)), key=lambda i: _tick_priority(axis, ticks[i].get_loc(), i, len(ticks)))
            kept = []
            for i in order:
                if not any(boxes_overlap(boxes[i], boxes[j], 0) for j in kept):
                    kept.append(i)
            if len(kept) < len(ticks):
                dropped += len(ticks) - len(kept)
                axis.set_major_locator(ticker.FixedLocator(sorted(ticks[i].get_loc() for i in kept)))
    return dropped


# ---------------------------------------------------------------------------------------------------
# Value labels at the ends of bars


def fit_texts_in_axes(fig, ax, tries=4):
    """Widens a horizontal bar chart's x range (from 0, or on a log axis) until every text placed in
    the axes (a bar's value at its end) ends inside them."""
    for _ in range(tries):
        renderer = fig.canvas.get_renderer()
        fig.canvas.draw()
        frame = ax.get_window_extent(renderer)
        over = max([t.get_window_extent(renderer).x1 - frame.x1 for t in ax.texts] + [0.0])
        if over <= 0:
            return
        lo, hi = ax.get_xlim()
        grow = (frame.width + over + 4) / max(frame.width, 1.0)
        if ax.get_xscale() == "log":
            ax.set_xlim(lo, lo * (hi / lo) ** grow)
        else:
            ax.set_xlim(lo, lo + (hi - lo) * grow)


# ---------------------------------------------------------------------------------------------------
# Labels beside dots

# Offsets (points) from a dot to its label's anchor, and how the label hangs from it: beside the dot
# first, or above and below it first (which leaves the row of dots free for the others' labels).
_BESIDE = [((6, 0), "left", "center"), ((-6, 0), "right", "center"), ((5, 5), "left", "bottom"),
           ((-5, 5), "right", "bottom"), ((5, -5), "left", "top"), ((-5, -5), "right", "top")]
_ABOVE = [((0, 7), "left", "bottom"), ((0, 7), "right", "bottom"), ((0, -7), "left", "top"),
          ((0, -7), "right", "top"), ((0, 6), "center", "bottom"), ((0, -6), "center", "top")]


def _spots(first, rings=3):
    for ring in range(1, rings + 1):
        for (dx, dy), ha, va in first + [s for s in _BESIDE + _ABOVE if s not in first]:
            grow = ring * 1.6 ** (ring - 1)
            yield (dx * grow, dy * grow), ha, va, ring > 1


def _try_place(ax, renderer, text, xy, taken, frame, fontsize, first=_BESIDE):
    for offset, ha, va, far in _spots(first):
        note = ax.annotate(text, xy, xytext=offset, textcoords="offset points", ha=ha, va=va,
                           fontsize=fontsize, annotation_clip=False,
                           arrowprops=dict(arrowstyle="-", color="#888888", linewidth=0.5) if far else None)
        box = note.get_window_extent(renderer)
        inside = box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0 and box.y1 <= frame.y1
        if inside and not any(boxes_overlap(box, t, 0) for t in taken):
            taken.append(box.padded(1))
            return note
        note.remove()
    return None


def _places(ax, xs, ys):
    """[(pixel position, [indices of the dots drawn there])]: dots within 2 pixels share a place."""
    places = []
    for i, (x, y) in enumerate(zip(xs, ys)):
        px, py = ax.transData.transform((x, y))
        same = next((p for p in places if abs(p[0][0] - px) <= 2 and abs(p[0][1] - py) <= 2), None)
        if same:
            same[1].append(i)
        else:
            places.append(((px, py), [i]))
    return places


def label_dots(fig, ax, xs, ys, labels, fontsize=8):
    """Writes each label beside its dot where it overlaps no other label, no dot and stays inside the
    axes (dots drawn at one place share one label, a line each); dots whose label finds no room get a
    number there instead, and the returned key lines (for a key beside the axes) say which label it
    is. Tries beside-first and above-first placements, longest or shortest texts first, and keeps the
    first that places every label (else the one that places most). Returns [] when all found room."""
    import matplotlib.transforms as mtransforms

    renderer = fig.canvas.get_renderer()
    fig.canvas.draw()
    frame = ax.get_window_extent(renderer)
    places = _places(ax, xs, ys)
    dots = [mtransforms.Bbox.from_bounds(px - 4, py - 4, 8, 8)
            for px, py in (ax.transData.transform((x, y)) for x, y in zip(xs, ys))]
    best = None
    for first in (_BESIDE, _ABOVE):
        for longest in (True, False):
            taken, notes, unplaced = list(dots), [], []
            order = sorted(enumerate(places, start=1), key=lambda t: len(t[1][1]), reverse=longest)
            for number, (_, members) in order:
                note = _try_place(ax, renderer, "\n".join(labels[i] for i in members),
                                  (xs[members[0]], ys[members[0]]), taken, frame, fontsize, first)
                notes.append(note) if note else unplaced.append((number, members))
            if best is None or len(unplaced) < len(best[2]):
                if best:
                    for note in best[1]:
                        note.remove()
                best = (taken, notes, unplaced)
            else:
                for note in notes:
                    note.remove()
            if not best[2]:
                break
        if not best[2]:
            break
    taken, _, unplaced = best
    key = []
    for number, members in sorted(unplaced):
        placed = _try_place(ax, renderer, str(number), (xs[members[0]], ys[members[0]]), taken, frame, fontsize)
        where = "" if placed else " (among other dots at its place)"
        key += [f"{number}{where}: {labels[i]}" for i in members]
    return key
