"""finetune/dev_curve_plot.py: mean line and min..max band over seeds, legend, axes, the
PNG written atomically, and PlotUnavailable without matplotlib.

Tolerances: plotted values are float64 means of the given curves (pytest.approx's default,
relative 1e-6, is far above their rounding); colours are compared within 2 of 255 levels,
the anti-aliasing of a line's edge."""
import importlib.util
import os
import re
import sys

import pytest

from finetune import dev_curve_plot

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
needs_matplotlib = pytest.mark.skipif(not HAVE_MATPLOTLIB,
                                      reason="matplotlib (the plots extra) is not installed")
TAB10_BLUE, TAB10_ORANGE = (0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E)  # first two line colours


def band_edges(collection):
    """{x: (lowest y, highest y)} of a fill_between polygon."""
    edges = {}
    for path in collection.get_paths():
        for x, y in path.vertices:
            low, high = edges.get(float(x), (y, y))
            edges[float(x)] = (min(low, y), max(high, y))
    return edges


@needs_matplotlib
def test_dev_curve_names_runs_and_axes_with_distinct_ticks():
    # Close values and large step counts: an old writer printed 0.51, 0.51, ... here.
    series = [("random init", [0, 10000, 20000], [[0.5, 0.505, 0.51]]),
              ("after pretraining", [0, 10000, 20000], [[0.49, 0.5, 0.5075]])]
    figure = dev_curve_plot.make_figure(series)
    figure.canvas.draw()
    axes = figure.axes[0]
    assert axes.get_xlabel() == "fine-tuning step"
    assert axes.get_ylabel() == "dev accuracy (%)"
    assert axes.get_title() == "Dev accuracy during fine-tuning"
    legend = [text.get_text() for text in axes.get_legend().get_texts()]
    assert legend == ["random init (best 51.00 at step 20000)",
                      "after pretraining (best 50.75 at step 20000)"]
    for line, (_, steps, (values,)) in zip(axes.get_lines(), series):
        assert list(line.get_xdata()) == steps
        assert list(line.get_ydata()) == pytest.approx([100 * v for v in values])
    assert not axes.collections  # one seed: no band
    low, high = axes.get_ylim()
    for axis, (visible_low, visible_high) in ((axes.yaxis, (low, high)),
                                              (axes.xaxis, axes.get_xlim())):
        ticks = [(tick.get_loc(), tick.label1.get_text()) for tick in axis.get_major_ticks()]
        labels = [text for loc, text in ticks if visible_low <= loc <= visible_high]
        assert len(labels) >= 3 and len(set(labels)) == len(labels), labels
        assert all(re.fullmatch(r"[0-9]+(\.[0-9]+)?", text.replace("\u2212", "-"))
                   for text in labels), labels  # plain numbers: no 1e4, no offset
        assert axis.get_offset_text().get_text() == ""
    assert {"10000", "20000"} <= set(labels)  # x labels are whole steps


@needs_matplotlib
def test_flat_curve_still_gets_a_readable_y_axis():
    for values in ([0.5, 0.5, 0.5], [0.5, 0.50001, 0.5]):
        figure = dev_curve_plot.make_figure([("random init", [0, 100, 200], [values])])
        low, high = figure.axes[0].get_ylim()
        assert high - low >= dev_curve_plot.MIN_Y_SPAN - 1e-9 and low < 50 < high


@needs_matplotlib
def test_mean_line_and_min_max_band_over_seeds_at_the_shared_steps():
    steps = [0, 100, 200, 300]
    per_seed = [[0.50, 0.60, 0.70, 0.72],
                [0.52, 0.66, 0.64],          # stopped after step 200
                [0.54, 0.63, 0.67, 0.80]]
    figure = dev_curve_plot.make_figure([("after pretraining", steps, per_seed)],
                                        metric_name="macro_f1")
    axes = figure.axes[0]
    (line,) = axes.get_lines()
    assert list(line.get_xdata()) == [0, 100, 200]  # step 300 is not shared by every seed
    assert list(line.get_ydata()) == pytest.approx([52.0, 63.0, 67.0])
    (band,) = axes.collections
    edges = band_edges(band)
    assert sorted(edges) == [0, 100, 200]
    for x, (low, high) in zip((0, 100, 200), ((50, 54), (60, 66), (64, 70))):
        assert edges[x] == pytest.approx((low, high))
    from matplotlib.colors import to_rgb
    assert tuple(band.get_facecolor()[0][:3]) == pytest.approx(to_rgb(line.get_color()))
    assert band.get_alpha() == dev_curve_plot.BAND_ALPHA  # shaded: the line shows through
    assert axes.get_ylabel() == "dev macro_f1 (%)"
    assert "band: min to max" in axes.get_title()
    assert [t.get_text() for t in axes.get_legend().get_texts()] == [
        "after pretraining (mean curve peaks at 67.00, step 200)"]


@needs_matplotlib
def test_tie_goes_to_the_first_step_and_bad_lengths_are_refused():
    figure = dev_curve_plot.make_figure([("run", [0, 10, 20], [[0.6, 0.7, 0.7], [0.6, 0.5, 0.5]])])
    legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    # means 60, 60, 60: step 0 (before training) is never the best, the first trained step is
    assert legend == ["run (mean curve peaks at 60.00, step 10)"]
    assert dev_curve_plot.legend_label("run", [0], [0.6]) == "run (best 60.00 at step 0)"
    with pytest.raises(ValueError, match="4 values for 3 steps"):
        dev_curve_plot.make_figure([("run", [0, 10, 20], [[0.5] * 4])])


@needs_matplotlib
def test_write_dev_curve_writes_a_png_of_the_figure_size_atomically(tmp_path):
    from matplotlib import image
    path = tmp_path / "dev_curve.png"
    dev_curve_plot.write_dev_curve(str(path), [
        ("random init", [0, 100, 200], [[0.50, 0.53, 0.55], [0.50, 0.52, 0.57]]),
        ("after pretraining", [0, 100, 200], [[0.50, 0.59, 0.61], [0.51, 0.60, 0.62]])])
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = (image.imread(str(path))[..., :3] * 255).round().astype(int)
    width, height = (round(d * dev_curve_plot.DPI) for d in dev_curve_plot.FIGURE_INCHES)
    assert pixels.shape == (height, width, 3)
    for colour in (TAB10_BLUE, TAB10_ORANGE):  # both runs are drawn
        assert (abs(pixels - colour).max(axis=-1) <= 2).sum() > 200
    assert os.listdir(tmp_path) == ["dev_curve.png"]  # no temporary file left


def test_without_matplotlib_nothing_is_written_and_the_error_says_how(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` -> ImportError
    path = tmp_path / "dev_curve.png"
    with pytest.raises(dev_curve_plot.PlotUnavailable, match="matplotlib cannot be imported.*"
                                                             "pip install"):
        dev_curve_plot.write_dev_curve(str(path), [("run", [0], [[0.5]])])
    assert not os.listdir(tmp_path)


@needs_matplotlib
def test_chinese_labels_get_a_cjk_font_or_one_warning(monkeypatch):
    from matplotlib import font_manager
    series = [("随机初始化", [0, 10], [[0.5, 0.6]])]
    monkeypatch.setattr(font_manager.fontManager, "ttflist", [])
    with pytest.warns(UserWarning, match="no CJK font found"):
        dev_curve_plot.make_figure(series)
    fake = font_manager.FontEntry(fname="fake.ttf", name="Noto Sans CJK SC")
    monkeypatch.setattr(font_manager.fontManager, "ttflist", [fake])
    prop = dev_curve_plot._legend_font(["随机初始化"])
    assert prop.get_family() == ["DejaVu Sans", "Noto Sans CJK SC"]
    assert dev_curve_plot._legend_font(["random init"]) is None
