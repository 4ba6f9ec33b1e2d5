"""A tiny line-plot PNG writer (numpy + zlib only; matplotlib is not a dependency).

`line_plot(path, series, ...)` draws one polyline per run on white, with axes,
tick marks and numeric tick labels, and a legend of coloured swatches (the
swatch order is the series order; callers name the colours in their text
output via `COLOUR_NAMES`). `write_png(path, rgb)` encodes any uint8 [H, W, 3]
array as an 8-bit RGB PNG.
"""
import struct
import zlib

import numpy as np

PALETTE = np.array([(31, 119, 180), (214, 39, 40), (44, 160, 44), (255, 127, 14),
                    (148, 103, 189), (23, 190, 207), (140, 86, 75), (227, 119, 194)], np.uint8)
COLOUR_NAMES = ["blue", "red", "green", "orange", "purple", "cyan", "brown", "pink"]

# 3x5 bitmap glyphs for tick labels: each string is 5 rows of 3 bits.
_GLYPHS = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111",
    "3": "111001111001111", "4": "101101111001001", "5": "111100111001111",
    "6": "111100111101111", "7": "111001001001001", "8": "111101111101111",
    "9": "111101111001111", ".": "000000000000010", "-": "000000111000000",
    "k": "100101110101101",
}


def write_png(path, rgb):
    """Writes a uint8 [H, W, 3] array as a PNG file (filter type 0, zlib level 9)."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"write_png expects an [H, W, 3] uint8 array, got shape {rgb.shape}")
    height, width, _ = rgb.shape
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rgb.reshape(height, width * 3)], axis=1)

    def chunk(tag, data):
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit truecolour
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                + chunk(b"IDAT", zlib.compress(raw.tobytes(), 9)) + chunk(b"IEND", b""))


def _draw_segment(canvas, x0, y0, x1, y1, colour, thickness=2):
    """Draws a straight segment by dense sampling; coordinates in pixels (floats)."""
    steps = int(max(abs(x1 - x0), abs(y1 - y0))) * 2 + 1
    xs = np.rint(np.linspace(x0, x1, steps)).astype(int)
    ys = np.rint(np.linspace(y0, y1, steps)).astype(int)
    height, width, _ = canvas.shape
    for dx in range(thickness):
        for dy in range(thickness):
            px, py = np.clip(xs + dx, 0, width - 1), np.clip(ys + dy, 0, height - 1)
            canvas[py, px] = colour


def _draw_text(canvas, x, y, text, scale=2, colour=(0, 0, 0)):
    """Draws `text` with the 3x5 glyphs, top-left corner at (x, y); unknown chars skipped."""
    for char in text:
        glyph = _GLYPHS.get(char)
        if glyph is not None:
            bits = np.array([int(b) for b in glyph], bool).reshape(5, 3)
            block = np.kron(bits, np.ones((scale, scale), bool))
            region = canvas[y:y + block.shape[0], x:x + block.shape[1]]
            region[block[:region.shape[0], :region.shape[1]]] = colour
        x += 4 * scale


def _format_tick(value, span):
    if abs(value) >= 10000:
        return f"{value / 1000:.0f}k"
    if span >= 5:
        return f"{value:.0f}"
    return f"{value:.2f}"


def _nice_ticks(low, high, count=5):
    span = max(high - low, 1e-9)
    raw = span / count
    magnitude = 10 ** np.floor(np.log10(raw))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw), default=raw)
    first = np.ceil(low / step) * step
    return [t for t in np.arange(first, high + step * 1e-6, step)]


def line_plot(path, series, width=640, height=400, y_range=None):
    """Plots series = [(label, xs, ys), ...] to a PNG of exactly width x height pixels.

    y_range: (low, high) or None to fit the data. Returns the colour name used
    for each series, in order. Series with no points still get a legend swatch.
    """
    if len(series) > len(PALETTE):
        raise ValueError(f"at most {len(PALETTE)} series can be plotted, got {len(series)}")
    canvas = np.full((height, width, 3), 255, np.uint8)
    left, right, top, bottom = 60, width - 20, 20 + 16 * len(series), height - 40
    all_x = [float(x) for _, xs, _ in series for x in xs]
    all_y = [float(y) for _, _, ys in series for y in ys]
    x_low, x_high = (min(all_x), max(all_x)) if all_x else (0.0, 1.0)
    if x_high == x_low:
        x_high = x_low + 1.0
    if y_range is None:
        y_low, y_high = (min(all_y), max(all_y)) if all_y else (0.0, 1.0)
        pad = max((y_high - y_low) * 0.05, 0.01)
        y_low, y_high = y_low - pad, y_high + pad
    else:
        y_low, y_high = y_range

    def to_px(x, y):
        return (left + (x - x_low) / (x_high - x_low) * (right - left),
                bottom - (y - y_low) / (y_high - y_low) * (bottom - top))

    grey = (200, 200, 200)
    for tick in _nice_ticks(y_low, y_high):
        _, py = to_px(x_low, tick)
        _draw_segment(canvas, left, py, right, py, grey, thickness=1)
        _draw_text(canvas, 4, int(py) - 5, _format_tick(tick, y_high - y_low))
    for tick in _nice_ticks(x_low, x_high):
        px, _ = to_px(tick, y_low)
        _draw_segment(canvas, px, bottom, px, bottom + 5, (0, 0, 0), thickness=1)
        label = _format_tick(tick, x_high - x_low)
        label_width = 8 * len(label) - 2  # 3-pixel glyphs + 1 spacing, scale 2
        label_x = min(max(int(px) - label_width // 2, 0), width - label_width)  # centred, kept inside
        _draw_text(canvas, label_x, bottom + 10, label)
    _draw_segment(canvas, left, top, left, bottom, (0, 0, 0))
    _draw_segment(canvas, left, bottom, right, bottom, (0, 0, 0))

    for index, (_, xs, ys) in enumerate(series):
        colour = PALETTE[index]
        points = [to_px(float(x), float(y)) for x, y in zip(xs, ys)]
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            _draw_segment(canvas, x0, y0, x1, y1, colour)
        for x0, y0 in points:  # a small square marks every evaluation
            canvas[max(int(y0) - 2, 0):int(y0) + 3, max(int(x0) - 2, 0):int(x0) + 3] = colour
        swatch_y = 6 + 16 * index
        canvas[swatch_y:swatch_y + 10, left + 10:left + 40] = colour
        _draw_text(canvas, left + 48, swatch_y, str(index + 1))
    write_png(path, canvas)
    return COLOUR_NAMES[:len(series)]
