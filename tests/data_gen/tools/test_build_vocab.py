"""data_gen.tools.build_vocab: layout, exact size, coverage, learned WordPieces, errors."""
import glob
import subprocess
import sys

import pytest

from data_gen.tools import build_vocab as bv
from data_gen.text.tokenization import FullTokenizer, load_vocab

CORPUS = """今天天气很好，我们去公园散步。
Deep learning 让机器学习变得更强大，learning rate 很重要。

我在学习 Python 和 machine learning。
手机号码是 13800138000，价格 99.5 元 😀！
Hello World, hello again.

的的的的的的的的的的
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def build_and_load(tmp_path, files, **kwargs):
    tokens, report = bv.build_vocab(files, **kwargs)
    vocab_file = str(tmp_path / "vocab.txt")
    bv.write_vocab(tokens, vocab_file)
    return tokens, report, vocab_file


def test_layout_specials_and_exact_size(tmp_path):
    corpus = write(tmp_path, "c.txt", CORPUS)
    tokens, report, vocab_file = build_and_load(tmp_path, [corpus], vocab_size=400, num_unused=10)
    vocab = load_vocab(vocab_file)
    assert len(tokens) == 400 == len(vocab)  # exactly N lines, no duplicates
    assert open(vocab_file, encoding="utf-8").read().count("\n") == 400
    assert vocab["[PAD]"] == 0
    assert [vocab[f"[unused{i}]"] for i in (1, 10)] == [1, 10]
    assert [vocab[t] for t in ("[UNK]", "[CLS]", "[SEP]", "[MASK]")] == [11, 12, 13, 14]
    # Padding slots fill the tail, numbered after the leading ones.
    assert tokens[-1] == f"[unused{report['unused_slots']}]"
    assert tokens.index("[unused11]") > vocab["的"]
    for required in ["0", "9", "a", "z", "##0", "##z", "，", "。", "!", "?"]:
        assert required in vocab, required


def test_every_corpus_character_tokenizes_without_unk(tmp_path):
    corpus = write(tmp_path, "c.txt", CORPUS)
    _, _, vocab_file = build_and_load(tmp_path, [corpus], vocab_size=400)
    tokenizer = FullTokenizer(vocab_file)
    for line in CORPUS.splitlines():
        tokens = tokenizer.tokenize(line)
        assert "[UNK]" not in tokens, (line, tokens)
    # Every CJK and emoji character is a single-character token of its own.
    for char in "天气公园机器😀":
        assert char in tokenizer.vocab


def test_cjk_characters_ordered_by_frequency(tmp_path):
    corpus = write(tmp_path, "c.txt", CORPUS)
    _, _, vocab_file = build_and_load(tmp_path, [corpus])
    vocab = load_vocab(vocab_file)
    # 的 occurs 10 times, 学 3 times, 园 once.
    assert vocab["的"] < vocab["学"] < vocab["园"]


def test_frequent_words_become_whole_pieces_and_case_is_folded(tmp_path):
    corpus = write(tmp_path, "c.txt", CORPUS)
    _, report, vocab_file = build_and_load(tmp_path, [corpus], vocab_size=400)
    tokenizer = FullTokenizer(vocab_file)
    assert "learning" in tokenizer.vocab  # 4 occurrences: learned as a whole word
    assert tokenizer.tokenize("Learning") == ["learning"]
    assert tokenizer.tokenize("HELLO") == ["hello"]
    assert report["learned_wordpieces"] > 0
    # A word never seen still tokenizes, through single-character pieces.
    assert tokenizer.tokenize("zyx") == ["z", "##y", "##x"]


def test_cased_vocab_keeps_upper_case_letters(tmp_path):
    corpus = write(tmp_path, "c.txt", CORPUS)
    _, _, vocab_file = build_and_load(tmp_path, [corpus], do_lower_case=False)
    tokenizer = FullTokenizer(vocab_file, do_lower_case=False)
    assert "H" in tokenizer.vocab and "##W" in tokenizer.vocab
    assert "[UNK]" not in tokenizer.tokenize("Hello World HELLO")


def test_learn_wordpieces_merges_most_frequent_pairs_deterministically():
    words = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
    # Pair counts: (##e,##s)=9 ties (##s,##t)=9, broken by text; then
    # (##es,##t)=9; then (##o,##w)=7 ties (l,##o)=7; then (l,##ow)=7.
    assert bv.learn_wordpieces(words, max_pieces=4) == ["##es", "##est", "##ow", "low"]
    # Stops when no pair is frequent enough.
    assert bv.learn_wordpieces({"ab": 1, "cd": 1}, max_pieces=10) == []
    assert bv.learn_wordpieces({"ab": 1, "cd": 1}, max_pieces=10, min_pair_count=1) == ["ab", "cd"]


def test_too_small_vocab_size_says_by_how_much(tmp_path):
    corpus = write(tmp_path, "c.txt", CORPUS)
    tokens, _ = bv.build_vocab([corpus])
    learned = bv.build_vocab([corpus])[1]["learned_wordpieces"]
    needed = len(tokens) - learned
    with pytest.raises(bv.VocabBuildError) as error:
        bv.build_vocab([corpus], vocab_size=needed - 7)
    message = str(error.value)
    assert f"needs {needed} vocab entries" in message
    assert "(7 too many)" in message
    # Exactly the required size works: no room for learned pieces, no padding.
    tokens_exact, report = bv.build_vocab([corpus], vocab_size=needed)
    assert len(tokens_exact) == needed and report["learned_wordpieces"] == 0


def test_min_count_drops_rare_characters_to_unk(tmp_path):
    corpus = write(tmp_path, "c.txt", CORPUS)
    _, report, vocab_file = build_and_load(tmp_path, [corpus], min_count=2)
    tokenizer = FullTokenizer(vocab_file)
    assert "园" not in tokenizer.vocab  # occurs once
    assert tokenizer.tokenize("园") == ["[UNK]"]
    assert "的" in tokenizer.vocab
    assert report["dropped_rare_characters"] > 0


def test_cli_writes_exact_size_and_reports_errors(tmp_path, repo_root):
    corpus = write(tmp_path, "c.txt", CORPUS)
    output = tmp_path / "out" / "vocab.txt"
    command = [sys.executable, "-m", "data_gen.tools.build_vocab", f"--input_file={tmp_path}/*.txt",
               f"--output_file={output}", "--vocab_size=350"]
    result = subprocess.run(command, cwd=repo_root, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert len(output.read_text(encoding="utf-8").splitlines()) == 350
    assert "wrote 350 tokens" in result.stdout
    assert not list((tmp_path / "out").glob(".*incomplete*"))

    too_small = command[:-1] + ["--vocab_size=50"]
    result = subprocess.run(too_small, cwd=repo_root, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "too many" in result.stderr and "--vocab_size" in result.stderr
    missing = [sys.executable, "-m", "data_gen.tools.build_vocab", f"--input_file={corpus}.nope",
               f"--output_file={output}"]
    result = subprocess.run(missing, cwd=repo_root, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "matches no file" in result.stderr


def test_demo_corpus_and_pairs_fit_in_5000(tmp_path, repo_root):
    """The demo builds its 5000-entry vocab from data/sample/*.txt: no [UNK] in the sample."""
    files = sorted(glob.glob(str(repo_root / "data" / "sample" / "*.txt")))
    assert files, "data/sample/*.txt is missing"
    _, report, vocab_file = build_and_load(tmp_path, files, vocab_size=5000)
    assert report["vocab_size"] == 5000
    tokenizer = FullTokenizer(vocab_file)
    texts = files + sorted(glob.glob(str(repo_root / "data" / "sample" / "pairs" / "*.txt")))
    for path in texts:
        with open(path, encoding="utf-8") as reader:
            for line_number, line in enumerate(reader, start=1):
                for field in line.rstrip("\n").split("\t")[:2]:
                    tokens = tokenizer.tokenize(field)
                    assert "[UNK]" not in tokens, f"{path}:{line_number}: {field!r} -> {tokens}"
