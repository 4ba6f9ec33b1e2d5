"""pretrain.checkpoints.checkpoint_assets: finding a checkpoint's config, vocab and task,
and checking a vocab given by flag against the checkpoint's."""
import json
import os

import numpy as np
import pytest

from common.cli_options import UserError
from pretrain.checkpoints import checkpoint_assets as assets_lib
from pretrain.checkpoints import checkpoint_io
from pretrain.checkpoints.checkpoint_assets import AssetError, VocabMismatchError

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "我", "是", "中"]
TASK = {"format_version": 1, "task": "ner", "labels": ["O", "B-LOC", "I-LOC"],
        "tag_scheme": "BIO", "max_seq_length": 16, "do_lower_case": True}


def write_vocab(path, tokens=TOKENS, newline="\n", trailing=True):
    text = newline.join(tokens) + (newline if trailing else "")
    path.write_bytes(text.encode("utf-8"))
    return str(path)


def write_ckpt(prefix, state=True):
    checkpoint_io.write_checkpoint({"w": np.ones([2], np.float32)}, str(prefix),
                                   write_state=state)
    return str(prefix)


def finetune_dir(root, copies_in_best=True):
    """A fine-tuning output directory: step 20 at the top, step 10 in best/."""
    write_ckpt(root / "model.ckpt-20")
    best = write_ckpt(root / "best" / "model.ckpt-10")
    for folder in [root] + ([root / "best"] if copies_in_best else []):
        (folder / "bert_config.json").write_text('{"vocab_size": 8}')
        write_vocab(folder / "vocab.txt")
        (folder / "task.json").write_text(json.dumps(TASK))
    return best


def test_same_vocab_compares_tokens_not_bytes(tmp_path):
    unix = write_vocab(tmp_path / "unix.txt")
    assert assets_lib.same_vocab(unix, write_vocab(tmp_path / "dos.txt", newline="\r\n")) \
        == (True, None)
    assert assets_lib.same_vocab(unix, write_vocab(tmp_path / "bare.txt", trailing=False)) \
        == (True, None)
    swapped = TOKENS[:5] + ["是", "我", "中"]
    assert assets_lib.same_vocab(unix, write_vocab(tmp_path / "swapped.txt", swapped)) \
        == (False, 6)
    assert assets_lib.same_vocab(unix, write_vocab(tmp_path / "longer.txt", TOKENS + ["人"])) \
        == (False, 9)


def test_resolve_checkpoint_dir_prefix_directory_and_finetune_output(tmp_path):
    prefix = write_ckpt(tmp_path / "run" / "model.ckpt-5")
    assert assets_lib.resolve_checkpoint_dir(prefix) == prefix
    assert assets_lib.resolve_checkpoint_dir(prefix + ".index") == prefix
    assert assets_lib.resolve_checkpoint_dir(str(tmp_path / "run")) == prefix
    best = finetune_dir(tmp_path / "ft")
    assert assets_lib.resolve_checkpoint_dir(str(tmp_path / "ft")) == best
    # Without task.json it is a plain directory: its latest checkpoint.
    os.remove(tmp_path / "ft" / "task.json")
    assert assets_lib.resolve_checkpoint_dir(str(tmp_path / "ft")).endswith("ft/model.ckpt-20")


def test_resolve_checkpoint_dir_errors_name_the_flag_and_path(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(AssetError, match=r"^--init_checkpoint=.*empty: no checkpoint found in "
                                         r"this directory"):
        assets_lib.resolve_checkpoint_dir(str(tmp_path / "empty"))
    with pytest.raises(AssetError, match=r"--model=.*nothing/model.ckpt: no checkpoint found"):
        assets_lib.resolve_checkpoint_dir(str(tmp_path / "nothing" / "model.ckpt"), "--model")
    assert issubclass(AssetError, UserError) and issubclass(VocabMismatchError, AssetError)


def test_resolve_takes_the_files_beside_the_checkpoint(tmp_path):
    best = finetune_dir(tmp_path / "ft")
    found = assets_lib.resolve(str(tmp_path / "ft"))
    assert found.checkpoint == best
    assert found.config_file == str(tmp_path / "ft" / "best" / "bert_config.json")
    assert found.vocab_file == str(tmp_path / "ft" / "best" / "vocab.txt")
    assert (found.config_source, found.vocab_source) == ("checkpoint", "checkpoint")
    assert found.task == TASK and found.labels == ["O", "B-LOC", "I-LOC"]
    assert assets_lib.task_head(found.task) == "token"


def test_resolve_falls_back_to_the_directory_given(tmp_path):
    finetune_dir(tmp_path / "ft", copies_in_best=False)
    found = assets_lib.resolve(str(tmp_path / "ft"))
    assert found.checkpoint.endswith("best/model.ckpt-10")
    assert found.config_file == str(tmp_path / "ft" / "bert_config.json")
    assert found.task_file == str(tmp_path / "ft" / "task.json")


def test_flags_win_for_the_config_and_must_agree_for_the_vocab(tmp_path):
    finetune_dir(tmp_path / "ft")
    other_config = tmp_path / "other.json"
    other_config.write_text("{}")
    same_tokens = write_vocab(tmp_path / "copy.txt", newline="\r\n")
    found = assets_lib.resolve(str(tmp_path / "ft"), same_tokens, str(other_config))
    assert (found.config_file, found.config_source) == (str(other_config), "flag")
    assert (found.vocab_file, found.vocab_source) == (same_tokens, "flag")

    reordered = write_vocab(tmp_path / "reordered.txt", TOKENS[:5] + ["是", "我", "中"])
    with pytest.raises(VocabMismatchError) as caught:
        assets_lib.resolve(str(tmp_path / "ft"), reordered)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("--vocab_file=%s is not the vocab checkpoint " % reordered)
    assert "differs from %s at line 6 ('是' vs '我')" % (tmp_path / "ft" / "best" / "vocab.txt") \
        in message
    assert "Drop --vocab_file to use the checkpoint's vocab" in message


def test_checkpoints_without_assets_work_with_flags(tmp_path):
    prefix = write_ckpt(tmp_path / "google" / "bert_model.ckpt", state=False)
    vocab = write_vocab(tmp_path / "vocab.txt")
    found = assets_lib.resolve(prefix, vocab, "cfg.json")
    assert (found.checkpoint, found.config_file, found.vocab_file) == (prefix, "cfg.json", vocab)
    assert (found.config_source, found.vocab_source, found.task) == ("flag", "flag", None)
    bare = assets_lib.resolve(prefix)
    assert (bare.config_file, bare.vocab_file, bare.config_source, bare.vocab_source) == \
        (None, None, "none", "none")
    assert assets_lib.resolve().checkpoint is None
    error = assets_lib.missing_file_error("vocab", "vocab.txt", "--vocab_file", prefix, prefix)
    assert str(error) == ("no vocab: --init_checkpoint=%s has no vocab.txt beside it (looked in "
                          "%s); pass --vocab_file" % (prefix, tmp_path / "google"))


def test_write_assets_copies_bytes_and_writes_task_atomically(tmp_path):
    vocab = write_vocab(tmp_path / "v.txt", newline="\r\n")
    config = tmp_path / "c.json"
    config.write_text('{"vocab_size": 8}')
    written = assets_lib.write_assets(str(tmp_path / "out"), str(config), vocab, TASK)
    assert [os.path.basename(path) for path in written] == ["bert_config.json", "vocab.txt",
                                                            "task.json"]
    assert (tmp_path / "out" / "vocab.txt").read_bytes() == (tmp_path / "v.txt").read_bytes()
    assert (tmp_path / "out" / "bert_config.json").read_text() == '{"vocab_size": 8}'
    assert json.loads((tmp_path / "out" / "task.json").read_text()) == TASK
    assert sorted(os.listdir(tmp_path / "out")) == ["bert_config.json", "task.json", "vocab.txt"]
    # Writing a file onto itself keeps it.
    assets_lib.write_assets(str(tmp_path / "out"), vocab_file=str(tmp_path / "out" / "vocab.txt"))
    assert (tmp_path / "out" / "vocab.txt").read_bytes() == (tmp_path / "v.txt").read_bytes()


@pytest.mark.parametrize("change,phrase", [
    ({"task": "tagging"}, "task 'tagging' is not one of classification, pair, ner"),
    ({"labels": []}, "labels must be a non-empty list"),
    ({"labels": ["O", "O"]}, "name a class twice"),
    ({"tag_scheme": "IOB2"}, "tag_scheme 'IOB2'"),
    ({"format_version": 2}, "format_version 2 is not 1"),
])
def test_bad_task_json_is_refused_naming_the_file(tmp_path, change, phrase):
    finetune_dir(tmp_path / "ft")
    (tmp_path / "ft" / "best" / "task.json").write_text(json.dumps(dict(TASK, **change)))
    with pytest.raises(AssetError, match="task.json: .*" + phrase.replace("(", r"\(")) as caught:
        assets_lib.resolve(str(tmp_path / "ft"))
    assert str(tmp_path / "ft" / "best" / "task.json") in str(caught.value)
    with pytest.raises(AssetError, match=phrase.replace("(", r"\(")):
        assets_lib.write_assets(str(tmp_path / "out"), task=dict(TASK, **change))
    assert not (tmp_path / "out").exists()


def test_head_of_checkpoint_checks_task_against_the_weights():
    shapes = {"classifier/output_weights": [3, 32], "bert/pooler/dense/kernel": [32, 32]}
    assert assets_lib.head_of_checkpoint(None, shapes, "ck") == ("classifier", 3)
    assert assets_lib.head_of_checkpoint(None, {"x": [1]}, "ck") == (None, 0)
    pair = dict(TASK, task="pair", labels=["0", "1", "2"], tag_scheme=None)
    assert assets_lib.head_of_checkpoint(pair, shapes, "ck") == ("classifier", 3)
    with pytest.raises(AssetError, match=r"t\.json says task 'ner', but checkpoint ck has no "
                                         r"token_classifier/output_weights"):
        assets_lib.head_of_checkpoint(TASK, shapes, "ck", "t.json")
    with pytest.raises(AssetError, match=r"lists 2 labels but the head classifier/output_weights "
                                         r"of checkpoint ck has 3 outputs"):
        assets_lib.head_of_checkpoint(dict(pair, labels=["a", "b"]), shapes, "ck")
    both = dict(shapes, **{"token_classifier/output_weights": [3, 32]})
    with pytest.raises(AssetError, match="holds both"):
        assets_lib.head_of_checkpoint(None, both, "ck")


def test_a_transformers_folder_given_as_a_checkpoint_says_to_import_it(tmp_path):
    folder = tmp_path / "hf" / "chinese-roberta-wwm-ext"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"")
    with pytest.raises(AssetError) as raised:
        assets_lib.resolve_checkpoint_dir(str(folder))
    message = str(raised.value)
    assert message.startswith(f"--init_checkpoint={folder} is a transformers model")
    assert (f"python -m pretrain.interop.import_hf --model_dir={folder} "
            "--output_dir=runs/imported") in message
    (folder / "model.safetensors").unlink()  # config.json alone is no transformers model
    with pytest.raises(AssetError, match="no checkpoint found in this directory"):
        assets_lib.resolve_checkpoint_dir(str(folder))


def test_a_tf_checkpoint_given_to_import_hf_says_to_use_it_as_it_is(tmp_path):
    from pretrain.interop import hf_files
    folder = tmp_path / "runs" / "pretrained"
    checkpoint_io.write_checkpoint({"bert/w": np.zeros([2], np.float32)},
                                   str(folder / "model.ckpt-10"), write_state=True)
    (folder / "bert_config.json").write_text("{}")
    with pytest.raises(UserError) as raised:
        hf_files.read_config(str(folder))
    message = str(raised.value)
    assert message.startswith(f"{folder} is a TF checkpoint, not a transformers model")
    assert "pass it as it is to --init_checkpoint" in message
    assert f"python -m pretrain.interop.export_hf --init_checkpoint={folder}" in message
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match="has no config.json; pass the directory a transformers"):
        hf_files.read_config(str(empty))
