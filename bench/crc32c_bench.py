"""Does the C TFRecord framer pay over framing in Python with google-crc32c? JSON lines.

    python bench/crc32c_bench.py [--corpus_kb=300] [--repeats=7]

Generates real pretraining records (albert mode, dupe_factor 2, one worker)
from the first `corpus_kb` KB of ../shared/data/corpus/clue_small_sample.txt
with Google's Chinese vocab, at max_seq_length 128 and 512, timing that run
(after a warm-up run that loads jieba's dictionary).
Then frames the same records, as data_gen does per chunk, two ways:
`c_framer` (data_gen.native._tfrecord, one C call) and `python_google_crc32c`
(tfrecord_writer's Python framing, CRCs from the google-crc32c package); the
best of `repeats` timings is kept. One JSON line per (seq length, path):
microseconds per record, MB/s of framed output, and `share_of_generation`,
the framing time as a fraction of the time the whole run took to make those
records. Missing inputs give a JSON "skipped" line.
"""
import argparse
import json
import os
import struct
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
CORPUS = os.path.join(SHARED, "corpus", "clue_small_sample.txt")
VOCAB = os.path.join(SHARED, "vocab", "bert_chinese_vocab.txt")


def _emit(record):
    print(json.dumps(record, sort_keys=True), flush=True)


def _unframe(path):
    """The records of an uncompressed TFRecord file (CRCs not checked)."""
    with open(path, "rb") as reader:
        data = reader.read()
    records, offset = [], 0
    while offset < len(data):
        (length,) = struct.unpack_from("<Q", data, offset)
        records.append(data[offset + 12:offset + 12 + length])
        offset += 16 + length
    return records


def _generate(corpus_path, max_seq_length, out_dir):
    """(records, seconds of the whole generation run)."""
    from data_gen.config import GenerationConfig
    from data_gen.create_pretraining_data import run
    output = os.path.join(out_dir, f"bench-{max_seq_length}.tfrecord")
    config = GenerationConfig(input_file=corpus_path, output_file=output, vocab_file=VOCAB,
                              mode="albert", max_seq_length=max_seq_length,
                              max_predictions_per_seq=max(20, max_seq_length * 15 // 100),
                              dupe_factor=2, num_workers=1, progress=False)
    started = time.perf_counter()
    run(config)
    return _unframe(output), time.perf_counter() - started


def _best_seconds(function, repeats):
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus_kb", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    missing = [path for path in (CORPUS, VOCAB) if not os.path.isfile(path)]
    if missing:
        _emit({"bench": "crc32c_framing", "skipped": f"missing {', '.join(missing)}"})
        return 0
    from data_gen import native
    from data_gen.records.tfrecord_writer import frame_records_joined
    paths = {"python_google_crc32c": False}
    try:
        native.resolve("_tfrecord", True)
        paths["c_framer"] = True
    except ImportError as error:
        _emit({"bench": "crc32c_framing", "path": "c_framer", "skipped": str(error)})
    with tempfile.TemporaryDirectory() as out_dir:
        corpus = os.path.join(out_dir, "corpus.txt")
        with open(CORPUS, "rb") as reader, open(corpus, "wb") as writer:
            text = reader.read(args.corpus_kb * 1024)
            writer.write(text[:text.rfind(b"\n") + 1])
        _generate(corpus, 128, out_dir)  # warm-up: jieba's dictionary, imports
        for max_seq_length in (128, 512):
            records, generation_seconds = _generate(corpus, max_seq_length, out_dir)
            expected = frame_records_joined(records, use_native=False)
            for name, use_native in paths.items():
                assert frame_records_joined(records, use_native=use_native) == expected
                seconds = _best_seconds(lambda: frame_records_joined(records, use_native),
                                        args.repeats)
                _emit({"bench": "crc32c_framing", "path": name, "max_seq_length": max_seq_length,
                       "records": len(records), "framed_mb": round(len(expected) / 1e6, 3),
                       "framing_seconds": round(seconds, 5),
                       "us_per_record": round(seconds / len(records) * 1e6, 3),
                       "mb_per_second": round(len(expected) / 1e6 / seconds, 1),
                       "generation_seconds": round(generation_seconds, 3),
                       "share_of_generation": round(seconds / generation_seconds, 5)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
