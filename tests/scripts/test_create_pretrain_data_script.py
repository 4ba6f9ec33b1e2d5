"""scripts/create_pretrain_data.sh: help, defaults anchored to the repo, same output from any cwd."""
import json
import os
import subprocess
import sys

SETTINGS = ("MODE", "INPUT", "OUTPUT_DIR", "VOCAB", "VOCAB_INPUT", "VOCAB_SIZE", "MAX_SEQ_LENGTH",
            "MAX_PREDICTIONS", "DUPE_FACTOR", "SEED", "NUM_WORKERS", "COMPRESSION", "PYTHON")
CORPUS = """我们今天去公园散步，天气非常好。
公园里有很多人在跑步和打太极拳。

手机没电了，我去找充电器。
充电器放在书桌的抽屉里。
Python 和 machine learning 都很有用。
"""


def script(repo_root):
    return str(repo_root / "scripts" / "create_pretrain_data.sh")


def clean_env(**overrides):
    """The caller's environment without any of the script's settings, plus overrides."""
    env = {k: v for k, v in os.environ.items()
           if k not in SETTINGS + ("BUILD_VOCAB", "DRY_RUN", "RANDOM_SEED")}
    env["PYTHON"] = sys.executable
    env.update(overrides)
    return env


def run_script(args, cwd, env, timeout=120):
    return subprocess.run(["bash"] + args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_help_explains_every_setting_with_defaults(repo_root):
    result = run_script([script(repo_root), "--help"], repo_root, clean_env())
    assert result.returncode == 0, result.stderr
    for name in SETTINGS:
        assert name in result.stdout, name
    # The generator's settings show the flag they set; their defaults are the tool's.
    assert "(--max_predictions_per_seq)" in result.stdout and "(--random_seed)" in result.stdout
    assert str(repo_root / "data" / "sample" / "corpus_zh.txt") in result.stdout


def test_defaults_resolve_to_the_repo_from_any_directory(repo_root, tmp_path):
    env = clean_env()
    from_root = run_script(["scripts/create_pretrain_data.sh", "--dry_run"], repo_root, env)
    from_scripts = run_script(["create_pretrain_data.sh", "--dry_run"], repo_root / "scripts", env)
    from_elsewhere = run_script([script(repo_root), "--dry_run"], tmp_path, env)
    assert from_root.returncode == 0, from_root.stderr
    assert from_root.stdout == from_scripts.stdout == from_elsewhere.stdout
    out = from_root.stdout
    assert f"--input_file={repo_root}/data/sample/corpus_zh.txt" in out
    assert f"--output_file={repo_root}/output/demo/data/sample.tfrecord" in out
    assert f"--vocab_file={repo_root}/output/demo/vocab.txt" in out
    if (repo_root / "output/demo/vocab.txt").is_file():  # `make demo` ran here: reused
        assert "data_gen.tools.build_vocab" not in out
    else:  # built, at the size the demo_tiny_bert config expects
        assert "data_gen.tools.build_vocab" in out and "--vocab_size=5000" in out
    for flag in ("--mode", "--max_seq_length", "--max_predictions_per_seq"):
        assert flag not in out  # unset: create_pretraining_data's own defaults apply


def test_options_env_vars_and_passthrough(repo_root, tmp_path):
    env = clean_env(MODE="bert", DUPE_FACTOR="3")
    result = run_script([script(repo_root), "--dry_run", "--mode", "albert", "--seed=7",
                         "--", "--ngram=2"], tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert "--mode=albert" in result.stdout  # the option wins over MODE=bert
    assert "--dupe_factor=3" in result.stdout and "--random_seed=7" in result.stdout
    assert result.stdout.rstrip().endswith("--ngram=2")
    seeded = run_script([script(repo_root), "--dry_run"], tmp_path, clean_env(SEED="9"))
    assert seeded.returncode == 0 and "--random_seed=9" in seeded.stdout and not seeded.stderr

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", encoding="utf-8")
    bad = run_script([script(repo_root), "--mode", "gpt", "--vocab", str(vocab),
                      "--output_dir", str(tmp_path / "out")], tmp_path, env)
    assert bad.returncode == 2 and "--mode=gpt: value should be one of <roberta|albert|bert|xlnet>" \
        in bad.stderr, bad.stderr
    unknown = run_script([script(repo_root), "--frobnicate"], tmp_path, env)
    assert unknown.returncode == 2 and "unknown argument '--frobnicate'" in unknown.stderr
    missing_vocab = run_script([script(repo_root), "--vocab", str(tmp_path / "none.txt")],
                               tmp_path, env)
    assert missing_vocab.returncode == 2 and "not found" in missing_vocab.stderr


def test_run_from_root_and_from_scripts_gives_identical_files(repo_root, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS, encoding="utf-8")
    common = dict(BUILD_VOCAB="always", VOCAB_SIZE="320", NUM_WORKERS="1", DUPE_FACTOR="1",
                  MAX_SEQ_LENGTH="32", MAX_PREDICTIONS="5")
    # Run 1: settings by environment variables, from the repository root.
    env = clean_env(INPUT=str(corpus), VOCAB_INPUT=str(corpus), VOCAB=str(tmp_path / "v1.txt"),
                    OUTPUT_DIR=str(tmp_path / "out1"), MODE="albert", **common)
    first = run_script(["scripts/create_pretrain_data.sh", "--", "--ngram=1"], repo_root, env)
    assert first.returncode == 0, first.stdout + first.stderr
    # Run 2: the same settings as options, from inside scripts/.
    env = clean_env(**common)
    second = run_script(["create_pretrain_data.sh", "--mode", "albert", "--input", str(corpus),
                         "--vocab_input", str(corpus), "--vocab", str(tmp_path / "v2.txt"),
                         "--output_dir", str(tmp_path / "out2"), "--", "--ngram=1"],
                        repo_root / "scripts", env)
    assert second.returncode == 0, second.stdout + second.stderr

    vocab1 = (tmp_path / "v1.txt").read_bytes()
    assert vocab1 == (tmp_path / "v2.txt").read_bytes()
    assert len(vocab1.decode("utf-8").splitlines()) == 320
    record1 = (tmp_path / "out1" / "sample.tfrecord").read_bytes()
    assert record1 and record1 == (tmp_path / "out2" / "sample.tfrecord").read_bytes()
    meta1 = json.loads((tmp_path / "out1" / "sample.tfrecord.meta.json").read_text())
    meta2 = json.loads((tmp_path / "out2" / "sample.tfrecord.meta.json").read_text())
    for meta in (meta1, meta2):
        for key in ("output_file", "vocab_file"):
            meta["flags"].pop(key)
        meta.pop("vocab_file")
    assert meta1 == meta2
    assert meta1["mode"] == "albert" and meta1["flags"]["ngram"] == 1
    assert meta1["max_seq_length"] == 32 and meta1["max_predictions_per_seq"] == 5
    assert meta1["vocab_size"] == 320 and meta1["file_counts"]["instances"] > 0
