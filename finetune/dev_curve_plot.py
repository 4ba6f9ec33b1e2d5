"""The dev-metric curves of a comparison as a PNG, drawn by matplotlib (Agg).

    write_dev_curve("results/lcqmc/dev_curve.png",
                    [("random init", [0, 1000, 2000], [[0.50, 0.53, 0.55],     # seed 1
                                                       [0.50, 0.52, 0.56]]),   # seed 2
                     ("after pretraining", [0, 1000, 2000], [[0.50, 0.59, 0.61],
                                                             [0.50, 0.60]])],  # stopped early
                    metric_name="accuracy")

One line per starting point: the mean over its seeds at the steps every seed
reached, with a shaded band from the lowest to the highest seed (no band for
one seed); the legend gives the peak of the mean curve and its step (one seed:
its best), not the table's mean of each seed's best. x = fine-tuning step,
y = dev metric in %. matplotlib is optional (the `plots` extra): without it
`write_dev_curve` raises `PlotUnavailable`, whose message is the one line
that says why there is no picture, and writes nothing.
"""
import warnings

from common.file_utils import atomic_output

TITLE = "Dev {metric} during fine-tuning"
BAND_NOTE = " (line: mean over seeds, band: min to max)"
X_TITLE = "fine-tuning step"
Y_TITLE = "dev {metric} (%)"
BAND_ALPHA = 0.2
MIN_Y_SPAN = 2.0  # percentage points: a flat curve still gets a readable y axis
FIGURE_INCHES, DPI = (7.5, 4.5), 110
LINE_STYLES = (("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"))  # told apart without colour
# Tried in order for labels in Chinese (DejaVu Sans, matplotlib's default, has no CJK glyphs).
CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Zen Hei",
             "WenQuanYi Micro Hei", "Microsoft YaHei", "SimHei", "PingFang SC", "Heiti SC")


class PlotUnavailable(RuntimeError):
    """matplotlib cannot be imported; the message says so and how to install it."""


def _matplotlib():
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        raise PlotUnavailable(
            f"matplotlib cannot be imported ({error}); pip install 'matplotlib>=3.7', "
            "or the plots extra: pip install -e '.[plots]'") from None
    return matplotlib


def _legend_font(labels):
    """FontProperties with an installed CJK fallback when a label needs one, else None."""
    if all(ord(char) < 0x2E80 for label in labels for char in label):
        return None
    from matplotlib import font_manager  # pylint: disable=import-outside-toplevel
    installed = {font.name for font in font_manager.fontManager.ttflist}
    fallbacks = [name for name in CJK_FONTS if name in installed]
    if not fallbacks:
        warnings.warn("no CJK font found (tried: " + ", ".join(CJK_FONTS) + "): Chinese run "
                      "labels show as boxes in the plot; install one, e.g. fonts-noto-cjk")
        return None
    return font_manager.FontProperties(family=["DejaVu Sans"] + fallbacks)


def legend_label(label, steps, values, num_seeds=1):
    """'NAME (best 61.40 at step 2000)' for one seed, 'NAME (mean curve peaks at 61.40, step
    2000)' for several (not the table's mean of each seed's best), as best-on-dev selection
    chooses: the first step wins a tie, and step 0 (before training) is a candidate only
    when it is the only step."""
    candidates = [i for i in range(len(values)) if steps[i] > 0] or list(range(len(values)))
    if not candidates:
        return label
    best = max(candidates, key=lambda i: (values[i], -steps[i]))
    if num_seeds > 1:
        return f"{label} (mean curve peaks at {100 * values[best]:.2f}, step {steps[best]})"
    return f"{label} (best {100 * values[best]:.2f} at step {steps[best]})"


def seed_summary(steps, values_per_seed):
    """(shared steps, mean, min, max over the seeds) at the steps every seed reached.

    values_per_seed: one list per seed of values at steps[0], steps[1], ...; a
    seed that stopped early has fewer values.
    """
    steps = list(steps)
    if not values_per_seed:
        return [], [], [], []
    for values in values_per_seed:
        if len(values) > len(steps):
            raise ValueError(f"{len(values)} values for {len(steps)} steps")
    shared = min(len(values) for values in values_per_seed)
    columns = [[float(values[i]) for values in values_per_seed] for i in range(shared)]
    means = [sum(column) / len(column) for column in columns]
    return (steps[:shared], means, [min(column) for column in columns],
            [max(column) for column in columns])


def make_figure(series, metric_name="accuracy"):
    """A matplotlib Figure of series = [(label, steps, values_per_seed), ...], values in [0, 1]."""
    _matplotlib()
    # pylint: disable=import-outside-toplevel
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=FIGURE_INCHES, dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    any_band = False
    for index, (label, steps, values_per_seed) in enumerate(series):
        shared_steps, means, lows, highs = seed_summary(steps, values_per_seed)
        marker, line_style = LINE_STYLES[index % len(LINE_STYLES)]
        (line,) = axes.plot(shared_steps, [100.0 * v for v in means], marker=marker,
                            linestyle=line_style, linewidth=1.8, markersize=5,
                            label=legend_label(label, shared_steps, means,
                                               len(values_per_seed)))
        if len(values_per_seed) > 1 and shared_steps:
            any_band = True
            axes.fill_between(shared_steps, [100.0 * v for v in lows],
                              [100.0 * v for v in highs], color=line.get_color(),
                              alpha=BAND_ALPHA, linewidth=0)
    axes.set_title(TITLE.format(metric=metric_name) + (BAND_NOTE if any_band else ""))
    axes.set_xlabel(X_TITLE)
    axes.set_ylabel(Y_TITLE.format(metric=metric_name))
    axes.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
    axes.ticklabel_format(axis="both", style="plain", useOffset=False)
    low, high = axes.get_ylim()
    if high - low < MIN_Y_SPAN:
        middle = (low + high) / 2
        axes.set_ylim(middle - MIN_Y_SPAN / 2, middle + MIN_Y_SPAN / 2)
    axes.grid(True, alpha=0.3)
    if series:
        axes.legend(loc="best", prop=_legend_font([label for label, _, _ in series]))
    return figure


def write_dev_curve(path, series, metric_name="accuracy"):
    """Writes the PNG of make_figure(series, metric_name) to `path` (atomically); raises
    PlotUnavailable without matplotlib."""
    figure = make_figure(series, metric_name)
    with atomic_output(path) as temporary, warnings.catch_warnings():
        # One warning about missing CJK fonts (in make_figure) instead of one per glyph.
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        figure.savefig(temporary, format="png")
