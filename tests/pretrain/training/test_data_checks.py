"""Pre-graph data checks: each mismatch names the file and the value."""
import pytest

from pretrain.models.bert import modeling
from pretrain.training import data_checks
from tests.testutil.pretrain_data import make_examples, write_records


def _config(vocab_size=50, max_position=32):
    return modeling.BertConfig.from_dict({
        "vocab_size": vocab_size, "hidden_size": 32, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 64,
        "max_position_embeddings": max_position, "type_vocab_size": 2})


def _check(pattern, config=None, seq=16, preds=4, head=True):
    return data_checks.check_input_data(str(pattern), seq, preds, config or _config(),
                                        use_sentence_head=head)


def test_matching_data_passes_and_returns_metas(tmp_path):
    path = write_records(tmp_path / "ok.tfrecord", make_examples(3))
    files, metas = _check(tmp_path / "*.tfrecord")
    assert files == [path]
    assert metas[0]["sentence_task"] == "sop"
    assert data_checks.infer_sentence_task(metas) == "sop"


def test_a_length_flag_other_than_the_datas_is_one_line_with_the_fix(tmp_path):
    paths = [write_records(tmp_path / f"p{k}.tfrecord", make_examples(3)) for k in range(4)]
    with pytest.raises(data_checks.DataCheckError) as err:
        _check(",".join(paths), preds=5)
    lines = str(err.value).splitlines()
    # one line for the four files and their features, naming the first sidecar and the fix
    assert lines == ["input data does not fit the flags/model config (1 problem(s)):",
                     f"  --max_predictions_per_seq=5, but the data was made with "
                     f"max_predictions_per_seq=4 ({paths[0]}.meta.json and 3 more file(s)): drop "
                     "the flag, it defaults to the data's, or remake the data with "
                     "--max_predictions_per_seq=5"]


def test_seq_length_beyond_position_embeddings(tmp_path):
    path = write_records(tmp_path / "s.tfrecord", make_examples(3))
    with pytest.raises(data_checks.DataCheckError,
                       match="--max_seq_length=16 exceeds the model's max_position_embeddings=8"):
        _check(path, config=_config(max_position=8))


def test_token_ids_beyond_vocab(tmp_path):
    path = write_records(tmp_path / "v.tfrecord", make_examples(3), max_token_id=70)
    with pytest.raises(data_checks.DataCheckError,
                       match=r"v\.tfrecord\.meta\.json: max_token_id=70 is not below the "
                             r"model's vocab_size=50"):
        _check(path)
    # the first record is checked too when there is no sidecar
    path2 = write_records(tmp_path / "w.tfrecord", make_examples(3), sidecar=False)
    with pytest.raises(data_checks.DataCheckError, match=r"w\.tfrecord: first record has "
                                                         r"input_ids up to \d+, not below"):
        _check(path2, config=_config(vocab_size=10))


def test_sentence_head_must_match_data_mode(tmp_path):
    roberta = write_records(tmp_path / "r.tfrecord", make_examples(3, sentence_task="none"),
                            mode="roberta")
    with pytest.raises(data_checks.DataCheckError, match="mode=roberta.*head is on"):
        _check(roberta, head=True)
    _check(roberta, head=False)
    albert = write_records(tmp_path / "a.tfrecord", make_examples(3), mode="albert")
    with pytest.raises(data_checks.DataCheckError, match="sentence_task=sop.*it is off"):
        _check(albert, head=False)


def test_empty_and_corrupt_files_are_named(tmp_path):
    good = write_records(tmp_path / "good.tfrecord", make_examples(3))
    empty = tmp_path / "empty.tfrecord"
    empty.write_bytes(b"")
    corrupt = tmp_path / "corrupt.tfrecord"
    corrupt.write_bytes(open(good, "rb").read()[:30] + b"\x00garbage")
    with pytest.raises(data_checks.DataCheckError) as err:
        _check(tmp_path / "*.tfrecord")
    msg = str(err.value)
    assert f"{empty}: the file is empty" in msg
    assert f"{corrupt}: cannot read the first record" in msg
    assert str(good) + ":" not in msg


def test_empty_glob_and_bad_sidecar(tmp_path):
    with pytest.raises(data_checks.DataCheckError, match=r"nope\*\.tfrecord"):
        _check(tmp_path / "nope*.tfrecord")
    path = write_records(tmp_path / "j.tfrecord", make_examples(2))
    (tmp_path / "j.tfrecord.meta.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"j\.tfrecord\.meta\.json is not valid JSON"):
        _check(path)


def test_file_without_sidecar_is_checked_from_its_first_record(tmp_path):
    path = write_records(tmp_path / "google.tfrecord", make_examples(2), sidecar=False)
    files, metas = _check(path, head=None)
    assert files == [path] and metas == [None]
    assert data_checks.infer_sentence_task(metas) is None
    with pytest.raises(data_checks.DataCheckError, match=r"google\.tfrecord: feature input_ids "
                                                         r"has length 16 but --max_seq_length=20"):
        _check(path, seq=20, head=None)


def test_gzip_without_sidecar_is_read_and_a_bad_sidecar_compression_is_named(tmp_path):
    gzip_bare = write_records(tmp_path / "g.data", make_examples(2), compression="gzip",
                              sidecar=False)  # no telling name either: the first bytes decide
    files, metas = _check(gzip_bare, head=None)
    assert files == [gzip_bare] and metas == [None]
    bad = write_records(tmp_path / "b.tfrecord", make_examples(2), compression="zip")
    with pytest.raises(data_checks.DataCheckError,
                       match=r"b\.tfrecord\.meta\.json: compression='zip' is not one of none, "
                             r"gzip"):
        _check(bad)
