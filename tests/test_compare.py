"""The comparison table, its files and the PNG plot (finetune/compare.py, finetune/png_plot.py)."""
import json
import struct
import zlib

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from finetune import compare, png_plot
from finetune_helpers import TINY_CONFIG, fast_settings, trained_run


def read_png(path):
    """Minimal decoder for the 8-bit RGB, filter-0 PNGs png_plot writes -> [H, W, 3]."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks = 8, {}
    while position < len(data):
        length, tag = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        crc = struct.unpack(">I", data[position + 8 + length:position + 12 + length])[0]
        assert crc == zlib.crc32(tag + body) & 0xFFFFFFFF, f"bad CRC in {tag}"
        chunks[tag] = chunks.get(tag, b"") + body
        position += 12 + length
    width, height, depth, colour_type = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, colour_type) == (8, 2) and b"IEND" in chunks
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, 1 + 3 * width)
    assert not raw[:, 0].any()  # filter type 0 on every row
    return raw[:, 1:].reshape(height, width, 3)


def test_write_png_round_trip(tmp_path):
    image = np.random.RandomState(0).randint(0, 256, size=(7, 5, 3)).astype(np.uint8)
    png_plot.write_png(tmp_path / "x.png", image)
    np.testing.assert_array_equal(read_png(tmp_path / "x.png"), image)


def test_line_plot_size_and_colours(tmp_path):
    colours = png_plot.line_plot(tmp_path / "p.png", [("a", [0, 10, 20], [0.5, 0.7, 0.9]),
                                                      ("b", [0, 10, 20], [0.5, 0.6, 0.65])],
                                 width=320, height=200)
    pixels = read_png(tmp_path / "p.png")
    assert pixels.shape == (200, 320, 3) and colours == ["blue", "red"]
    for index in range(2):
        drawn = np.all(pixels == png_plot.PALETTE[index], axis=-1)
        assert drawn.sum() > 100  # the line, its markers and the legend swatch
    # Run "a" ends higher than run "b": its last marker sits above b's (smaller row index).
    columns = slice(300 - 4, 300 + 1)
    rows_a = np.nonzero(np.all(pixels[:, columns] == png_plot.PALETTE[0], axis=-1).any(1))[0]
    rows_b = np.nonzero(np.all(pixels[:, columns] == png_plot.PALETTE[1], axis=-1).any(1))[0]
    assert rows_a.max() < rows_b.min()


def test_compare_table_files_and_reuse(tmp_path, tmp_path_factory):
    # Starting point "solved": the best checkpoint of a finished fine-tuning run
    # (encoder and classifier head, bert_config.json beside it), so the two rows
    # differ: about 50% from random initialisation, about 100% from "solved".
    task, trained_dir, trained_results, _ = trained_run(tmp_path_factory)
    checkpoint_dir = str(trained_dir / "best")
    other_config = tmp_path / "other_config.json"
    other_config.write_text(json.dumps(dict(TINY_CONFIG, hidden_size=16)))
    common = fast_settings(dict(task, bert_config_file=str(other_config)), "unused",
                           max_train_examples=320, num_train_epochs=1, eval_every_steps=10)
    del common["output_dir"]
    out = tmp_path / "out"
    specs = ["random init=", f"solved={checkpoint_dir}"]
    printed = []
    rows = compare.compare(specs, common, str(out), log_fn=printed.append)

    # The random-init run borrows the checkpoint's architecture, not --bert_config_file.
    assert [row["bert_config_file"] for row in rows] == [f"{checkpoint_dir}/bert_config.json"] * 2
    assert rows[0]["loaded_checkpoint"] is None
    assert rows[1]["loaded_checkpoint"] == tf.train.latest_checkpoint(checkpoint_dir)
    assert [p["step"] for p in rows[0]["dev_curve"]] == [0, 10]
    assert rows[0]["dev_accuracy"] < 0.8 < 0.9 < rows[1]["dev_accuracy"]
    assert rows[1]["dev_curve"][0]["accuracy"] == trained_results["dev_accuracy"]

    markdown = (out / "results.md").read_text(encoding="utf-8")
    assert printed[-1] == markdown
    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    table_rows = [line for line in markdown.splitlines() if line.startswith("| ") and
                  not line.startswith("| starting")]
    assert len(table_rows) == 2 == len(saved["runs"])
    first = saved["runs"][0]
    for line, run in zip(table_rows, saved["runs"]):
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[0] == run["label"]
        assert float(cells[2]) == pytest.approx(100 * run["dev_accuracy"], abs=0.005)
        assert float(cells[3]) == pytest.approx(100 * run["test_accuracy"], abs=0.005)
        assert float(cells[4]) == pytest.approx(
            100 * (run["dev_accuracy"] - first["dev_accuracy"]), abs=0.005)
        assert float(cells[5]) == pytest.approx(
            100 * (run["test_accuracy"] - first["test_accuracy"]), abs=0.005)
        per_run = json.loads(open(f"{run['run_dir']}/results.json", encoding="utf-8").read())
        assert per_run["test_accuracy"] == run["test_accuracy"]
    assert "1 blue = random init, 2 red = solved" in markdown
    assert read_png(out / "dev_curve.png").shape == (400, 640, 3)

    # Same settings again: both runs are collected, not retrained; same table.
    printed.clear()
    again = compare.compare(specs, common, str(out), log_fn=printed.append)
    assert sum(m.startswith("== ") and "collecting" in m for m in printed) == 2
    assert [r["test_accuracy"] for r in again] == [r["test_accuracy"] for r in rows]
    assert (out / "results.md").read_text(encoding="utf-8") == markdown
    # Changed settings never reuse a stale run.
    with pytest.raises(ValueError, match="no finished run with these settings"):
        compare.compare(specs, dict(common, learning_rate=5e-4), str(out), collect_only=True,
                        log_fn=lambda m: None)


def test_run_specs_are_checked():
    with pytest.raises(ValueError, match="LABEL=CHECKPOINT"):
        compare.parse_run("no separator")
    assert compare.parse_run("random init=") == ("random init", None)
    assert compare.parse_run("after = out/p ") == ("after", "out/p")
    with pytest.raises(ValueError, match="must differ"):
        compare.plan_runs(["a=", "a="], {"bert_config_file": "c.json"}, "out")


def run_script(repo_root, cwd, *args, **env):
    import os
    import subprocess
    return subprocess.run(["bash", str(repo_root / "scripts" / "lcqmc_finetune.sh"), *args],
                          cwd=cwd, env=dict(os.environ, **env), capture_output=True, text=True)


def test_script_help_and_missing_data_message(repo_root, tmp_path):
    shown = run_script(repo_root, tmp_path, "--help")
    assert shown.returncode == 0
    for setting in ("LCQMC_DIR", "BEFORE", "AFTER", "CONFIG", "VOCAB", "MAX_TRAIN_EXAMPLES",
                    "EPOCHS", "OUT"):
        assert setting in shown.stdout
    missing = run_script(repo_root, tmp_path, LCQMC_DIR="no_such_dir")
    assert missing.returncode == 2
    assert f"no LCQMC data at {tmp_path}/no_such_dir" in missing.stderr
    assert "text_a<TAB>text_b<TAB>label" in missing.stderr
    (tmp_path / "lcqmc").mkdir()
    for split in ("train", "dev", "test"):
        (tmp_path / "lcqmc" / f"{split}.txt").write_text("a\tb\t1\n", encoding="utf-8")
    no_checkpoint = run_script(repo_root, tmp_path, "--after", "nothing_here",
                               LCQMC_DIR="lcqmc")
    assert no_checkpoint.returncode == 2 and "holds no checkpoint" in no_checkpoint.stderr


def test_x_tick_labels_are_drawn_whole_even_at_the_right_edge(tmp_path):
    path = tmp_path / "ticks.png"
    png_plot.line_plot(str(path), [("a", [0, 1000, 2000], [0.5, 0.54, 0.55])])
    image = read_png(path)
    bottom = image.shape[0] - 40
    label_rows = image[bottom + 10:bottom + 20]  # 5 glyph rows at scale 2
    dark = (label_rows < 100).all(axis=-1)
    labels = ["0", "500", "1000", "1500", "2000"]
    glyph_pixels = sum(png_plot._GLYPHS[char].count("1") * 4 for label in labels for char in label)
    assert dark.sum() == glyph_pixels  # no label is cut off by the canvas edge
