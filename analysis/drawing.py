"""What every figure shares: colours, saving a PNG with the CSV of its numbers, legends and readable
axes. Text never overlaps (layout.py): numeric tick labels that would collide are thinned before a
figure is saved."""
import json
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib import ticker  # noqa: E402

import layout  # noqa: E402
from aggsim_data import si  # noqa: E402

COMPUTE, COMM, OTHER = "#4c72b0", "#dd8452", "#bbbbbb"
GATHER = "#c44e52"  # sharded data parallelism's exposed parameter gathers


class PlotError(Exception):
    """A figure asked for what the data does not have (plot.py exits non-zero with the message)."""


def save(fig, out, data=None):
    """Writes the PNG and, beside it, the numbers it shows (same name, .csv) so they can be checked.
    Numeric tick labels that would overlap are thinned first."""
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    layout.thin_tick_labels(fig)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    if data is not None:
        pd.DataFrame(data).to_csv(os.path.splitext(out)[0] + ".csv", index=False)
    return out


def run_name(run_dir):
    """How a run is named on a page and in its figures' titles: its folder and its scenario."""
    with open(os.path.join(run_dir, "summary.json")) as f:
        scenario = json.load(f).get("scenario", "")
    folder = os.path.basename(os.path.normpath(run_dir))
    return folder if scenario in ("", folder) else f"{folder} (scenario {scenario})"


def legend_below(fig, ax, handles=None, labels=None, ncol=4):
    """A legend under the axes and their x label, outside the data, in as many columns as fit."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    below = 0.62 / (fig.get_size_inches()[1] * ax.get_position().height)  # 0.62 inch under the axes
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -below), ncol=min(ncol, len(handles)),
              fontsize=8, frameon=False)


def legend_beside(ax, handles=None, labels=None, fontsize=7):
    """A legend to the right of the axes (many lines: they would cover the data), in columns of at most
    40 entries."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=fontsize, frameon=False,
              ncol=max(1, math.ceil(len(handles) / 40)))


def line_styles(n):
    """Distinct (colour, line style, marker) for n lines: past ten colours the style changes too."""
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles, markers = ["-", "--", ":", "-."], ["o", "s", "^", "D"]
    return [(colours[i % len(colours)], styles[i // len(colours) % 4], markers[i // len(colours) % 4])
            for i in range(n)]


def stacked_sizes(i, n):
    """(marker size, line width) of line i of n: later lines are drawn thinner, on top, so a line that
    coincides with an earlier one (ring and halving-doubling under alpha_beta) still shows both."""
    share = i / max(n - 1, 1)
    return 8 - 4 * share, 2.6 - 1.4 * share


def readable_log_axis(axis, values, base=10, formatter=None):
    """A log axis that always carries at least three labelled ticks: over less than two decades the
    ticks at 1, 2 and 5 of each decade are labelled too (else a short range shows one or two)."""
    vals = [v for v in values if v and v > 0 and math.isfinite(v)]
    fmt = formatter or (lambda v, _: f"{v:g}")
    if base == 2:
        axis.set_major_locator(ticker.LogLocator(base=2))
    elif vals and max(vals) / min(vals) < 3:
        # Less than a factor of 3: even 1, 2, 5 per decade could leave one label; linear steps do not.
        ticks = [t for t in ticker.MaxNLocator(6).tick_values(min(vals), max(vals)) if t > 0]
        axis.set_major_locator(ticker.FixedLocator(ticks))
    elif vals and max(vals) / min(vals) < 100:
        axis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(ticker.FuncFormatter(fmt))
    axis.set_minor_formatter(ticker.NullFormatter())


def si_formatter(unit):
    return ticker.FuncFormatter(lambda v, _: si(v, unit, digits=3) if v > 0 else "0")


def bar_font(n):
    """Font size of bar names and values for n bars (never below layout.MIN_FONT)."""
    return 9 if n <= 30 else layout.MIN_FONT
