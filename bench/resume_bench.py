"""What resuming the input costs: the saved input position against reading up to it again.

    python bench/resume_bench.py [--records=40000] [--depths=100,1000,10000]
                                 [--shuffle_buffers=0,1000,10000]

Writes pretraining-shaped records (seq 128, 20 predictions, random ids from a vocab of
21128) into 4 files, then, for each shuffle buffer, runs run_pretraining's training input
(pretrain.training.input_pipeline: files shuffled, interleaved, records shuffled, parsed,
batched by 256, prefetched) through DEPTH batches and saves its position the way a
checkpoint does (pretrain.training.input_state: the serialized iterator, a string tensor).
One JSON line per (buffer, depth):
  advance_seconds   reading DEPTH batches: what a rerun that skips what it has seen costs
  restore_seconds   a new graph and session restoring the saved position (the iterator
                    initialised, then the state put back), and the next batch read
  state_bytes       the position's size in the checkpoint
  same_next_batch   the restored iterator's next batch equals the unbroken iterator's
The records repeat (as training's input does), so DEPTH x 256 may exceed them.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(BENCH))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow.compat.v1 as tf  # noqa: E402  (after the path)

from pretrain.training import input_pipeline, input_state  # noqa: E402

SEQ, PREDS, BATCH, VOCAB, FILES = 128, 20, 256, 21128, 4


def write_records(folder, count):
    """`count` records over FILES files; returns their paths."""
    rng = np.random.RandomState(0)
    paths = [os.path.join(folder, f"part-{i}.tfrecord") for i in range(FILES)]
    writers = [tf.io.TFRecordWriter(path) for path in paths]
    for index in range(count):
        length = int(rng.randint(SEQ // 2, SEQ + 1))
        ids = rng.randint(100, VOCAB, size=SEQ) * (np.arange(SEQ) < length)
        features = {
            "input_ids": ids, "input_mask": (np.arange(SEQ) < length).astype(np.int64),
            "segment_ids": (np.arange(SEQ) >= length // 2) * (np.arange(SEQ) < length),
            "masked_lm_positions": np.sort(rng.choice(np.arange(1, length), PREDS, False)),
            "masked_lm_ids": rng.randint(100, VOCAB, size=PREDS),
            "next_sentence_labels": [rng.randint(2)]}
        feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))
                   for name, values in features.items()}
        feature["masked_lm_weights"] = tf.train.Feature(
            float_list=tf.train.FloatList(value=[1.0] * PREDS))
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        writers[index % FILES].write(example.SerializeToString())
    for writer in writers:
        writer.close()
    return paths


def _pipeline(paths, shuffle_buffer):
    """(next batch, Tracked) of the training input in a new default graph."""
    input_fn = input_pipeline.input_fn_builder(paths, SEQ, PREDS, True, batch_size=BATCH,
                                               shuffle_buffer=shuffle_buffer, seed=1)
    iterator = tf.data.make_initializable_iterator(input_fn({}))
    batch = iterator.get_next()
    tf.train.get_or_create_global_step()
    resource = iterator._iterator_resource  # pylint: disable=protected-access
    tracked = input_state.Tracked(resource, 1)
    return batch, tracked, iterator.initializer


def measure(paths, shuffle_buffer, depth):
    with tf.Graph().as_default():
        batch, tracked, initializer = _pipeline(paths, shuffle_buffer)
        with tf.Session() as session:
            session.run([initializer, tf.global_variables_initializer()])
            start = time.perf_counter()
            for _ in range(depth):
                session.run(batch["input_ids"])
            advance = time.perf_counter() - start
            session.run(tracked.capture)
            state = session.run(tracked.state)
            expected = session.run(batch["input_ids"])
    start = time.perf_counter()
    with tf.Graph().as_default():
        batch, tracked, initializer = _pipeline(paths, shuffle_buffer)
        with tf.Session() as session:
            session.run([initializer, tracked.state.assign(state)])
            session.run(tracked.restore)
            got = session.run(batch["input_ids"])
    restore = time.perf_counter() - start
    return {"shuffle_buffer": shuffle_buffer, "depth_batches": depth,
            "depth_records": depth * BATCH, "advance_seconds": round(advance, 3),
            "restore_seconds": round(restore, 3), "state_bytes": len(state),
            "same_next_batch": bool(np.array_equal(got, expected))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=40000)
    parser.add_argument("--depths", default="100,1000,10000")
    parser.add_argument("--shuffle_buffers", default="0,1000,10000")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        paths = write_records(folder, args.records)
        sizes = sum(os.path.getsize(path) for path in paths)
        print(json.dumps({"records": args.records, "files": FILES, "bytes": sizes,
                          "tensorflow": tf.__version__}), flush=True)
        for shuffle_buffer in (int(b) for b in args.shuffle_buffers.split(",")):
            for depth in (int(d) for d in args.depths.split(",")):
                print(json.dumps(measure(paths, shuffle_buffer, depth)), flush=True)


if __name__ == "__main__":
    main()
