"""Input pipeline: globs, sidecar exclusion, GZIP detection, gs://-style paths, dtypes, shapes,
sharding."""
import json

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from pretrain.training import input_pipeline
from tests.testutil.pretrain_data import make_examples, write_records


def _take(input_fn, params, batches, input_context=None):
    with tf.Graph().as_default():
        dataset = input_fn(params, input_context) if input_context else input_fn(params)
        nxt = tf.data.make_one_shot_iterator(dataset).get_next()
        with tf.Session() as sess:
            return [sess.run(nxt) for _ in range(batches)]


def test_globs_exclude_sidecars_and_files_being_written(tmp_path):
    write_records(tmp_path / "a.tfrecord", make_examples(4))
    write_records(tmp_path / "b.tfrecord.gz", make_examples(4), compression="gzip")
    (tmp_path / ".c.tfrecord.incomplete-99").write_bytes(b"half")  # data_gen still writing
    fn = input_pipeline.input_fn_builder(f"{tmp_path}/*,{tmp_path}/a.tfrecord", 16, 4,
                                         is_training=False)
    assert [f.split("/")[-1] for f in fn.files] == ["a.tfrecord", "b.tfrecord.gz"]
    with pytest.raises(ValueError, match=r"--input_file pattern .*nothing_here\*"):
        input_pipeline.input_fn_builder(f"{tmp_path}/a.tfrecord,{tmp_path}/nothing_here*", 16, 4,
                                        is_training=False)


def test_compression_from_sidecar_else_first_bytes_never_the_name(tmp_path):
    gzip_with_sidecar = write_records(tmp_path / "noext", make_examples(2), compression="gzip")
    gzip_bare = write_records(tmp_path / "g.tfrecord", make_examples(2), sidecar=False,
                              compression="gzip")
    plain_named_gz = write_records(tmp_path / "p.gz", make_examples(2), sidecar=False)
    # The sidecar is the authority: it says "none" for gzip bytes (then reading fails).
    overruled = write_records(tmp_path / "o.tfrecord", make_examples(2), compression="gzip")
    meta = json.loads(open(overruled + ".meta.json").read())
    with open(overruled + ".meta.json", "w") as writer:
        json.dump(dict(meta, compression="none"), writer)
    files = [gzip_with_sidecar, gzip_bare, plain_named_gz, overruled]
    assert input_pipeline.compression_types(files) == ["GZIP", "GZIP", "", ""]
    assert input_pipeline.compression_types(files, "gzip") == ["GZIP"] * 4
    with pytest.raises(ValueError, match=r"--compression: compression='zip'"):
        input_pipeline.compression_types(files, "zip")


def test_remote_paths_glob_and_detect_through_tf_gfile(tmp_path):
    root = "ram://zh_pretrain_input_pipeline"
    tf.io.gfile.makedirs(root)
    local_gzip = write_records(tmp_path / "a", make_examples(3, seed=6), compression="gzip")
    local_plain = write_records(tmp_path / "b", make_examples(3, seed=7), sidecar=False)
    tf.io.gfile.copy(local_gzip, f"{root}/a.tfrecord", overwrite=True)  # no sidecar: magic bytes
    tf.io.gfile.copy(local_plain, f"{root}/b.tfrecord", overwrite=True)
    tf.io.gfile.copy(local_gzip + ".meta.json", f"{root}/b.tfrecord.meta.json", overwrite=True)
    tf.io.gfile.copy(local_plain, f"{root}/.b.tfrecord.incomplete-1", overwrite=True)
    fn = input_pipeline.input_fn_builder(f"{root}/*", 16, 4, is_training=False)
    assert fn.files == [f"{root}/a.tfrecord", f"{root}/b.tfrecord"]
    # b's sidecar (copied from a gzip file) says gzip: the sidecar wins over the bytes.
    assert input_pipeline.compression_types(fn.files) == ["GZIP", "GZIP"]
    assert input_pipeline.compression_types([f"{root}/a.tfrecord"]) == ["GZIP"]
    tf.io.gfile.remove(f"{root}/b.tfrecord.meta.json")
    assert input_pipeline.compression_types(fn.files) == ["GZIP", ""]
    batch = _take(input_pipeline.input_fn_builder(f"{root}/*", 16, 4, is_training=False),
                  {"eval_batch_size": 6}, 1)[0]
    np.testing.assert_array_equal(batch["input_ids"][:3],
                                  [e["input_ids"] for e in make_examples(3, seed=6)])


def test_training_batches_mix_plain_and_gzip_files_with_int32_features(tmp_path):
    a = make_examples(6, seed=1)
    b = make_examples(6, seed=2)
    write_records(tmp_path / "a.tfrecord", a)
    write_records(tmp_path / "b.tfrecord.gz", b, compression="gzip")
    fn = input_pipeline.input_fn_builder(str(tmp_path / "*"), 16, 4, is_training=True, seed=3)
    batches = _take(fn, {"train_batch_size": 4}, 6)  # 24 examples > 12: repeats
    first = batches[0]
    assert first["input_ids"].shape == (4, 16) and first["input_ids"].dtype == np.int32
    assert first["masked_lm_ids"].shape == (4, 4) and first["masked_lm_ids"].dtype == np.int32
    assert first["masked_lm_weights"].dtype == np.float32
    assert first["next_sentence_labels"].shape == (4, 1)
    seen = {tuple(row) for batch in batches for row in batch["input_ids"]}
    expected = {tuple(e["input_ids"]) for e in a + b}
    assert seen <= expected  # nothing invented
    assert seen & {tuple(e["input_ids"]) for e in a}  # both files are read
    assert seen & {tuple(e["input_ids"]) for e in b}


def test_eval_reads_in_order_and_drops_the_partial_batch(tmp_path):
    examples = make_examples(10, seed=4)
    write_records(tmp_path / "e.tfrecord", examples)
    fn = input_pipeline.input_fn_builder(str(tmp_path / "e.tfrecord"), 16, 4, is_training=False)
    with tf.Graph().as_default():
        nxt = tf.data.make_one_shot_iterator(fn({"eval_batch_size": 4})).get_next()
        got = []
        with tf.Session() as sess:
            with pytest.raises(tf.errors.OutOfRangeError):
                while True:
                    got.append(sess.run(nxt)["input_ids"])
    assert len(got) == 2  # 10 examples, batch 4, remainder dropped
    np.testing.assert_array_equal(np.concatenate(got), [e["input_ids"] for e in examples[:8]])


def test_per_replica_batch_and_worker_sharding(tmp_path):
    for i in range(2):
        write_records(tmp_path / f"s{i}.tfrecord", make_examples(4, seed=10 + i))
    fn = input_pipeline.input_fn_builder(str(tmp_path / "s*.tfrecord"), 16, 4,
                                         is_training=True, seed=1)
    ctx0 = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=0,
                                      num_replicas_in_sync=4)
    ctx1 = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1,
                                      num_replicas_in_sync=4)
    b0 = _take(fn, {"train_batch_size": 8}, 4, ctx0)
    b1 = _take(fn, {"train_batch_size": 8}, 4, ctx1)
    assert b0[0]["input_ids"].shape == (2, 16)  # global 8 over 4 replicas
    rows0 = {tuple(r) for b in b0 for r in b["input_ids"]}
    rows1 = {tuple(r) for b in b1 for r in b["input_ids"]}
    assert rows0 and rows1 and not rows0 & rows1  # each worker reads its own file


def test_token_boundary_feature_is_ignored(tmp_path):
    examples = make_examples(4, seed=5)
    for e in examples:
        e["token_boundary"] = [1] * 16
    write_records(tmp_path / "tb.tfrecord", examples)
    fn = input_pipeline.input_fn_builder(str(tmp_path / "tb.tfrecord"), 16, 4, is_training=False)
    batch = _take(fn, {"eval_batch_size": 4}, 1)[0]
    assert "token_boundary" not in batch
    np.testing.assert_array_equal(batch["segment_ids"], [e["segment_ids"] for e in examples])
