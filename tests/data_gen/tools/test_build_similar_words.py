"""data_gen.tools.build_similar_words (cosine top-k from word vectors) and data_gen.modes.mlm.similar_words
(the TSV format): brute-force reference, ties, determinism, accounting, errors, loader."""
import subprocess
import sys

import numpy as np
import pytest

from tests.testutil.cli_runs import tool_env
from data_gen.tools import build_similar_words as bsw
from common import cli_options
from data_gen.modes.mlm import similar_words
from common.cli_options import UserError

CHARS = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自之着去"


def write_vectors(path, words, vectors, header=None):
    lines = [header or f"{len(words)} {vectors.shape[1]}"]
    lines += [word + " " + " ".join(f"{value:.6f}" for value in row) + " "
              for word, row in zip(words, vectors)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def random_words(count, seed):
    """`count` distinct words of 1 to 3 characters."""
    rng = np.random.default_rng(seed)
    words = []
    while len(words) < count:
        word = "".join(rng.choice(list(CHARS), size=rng.integers(1, 4)))
        if word not in words:
            words.append(word)
    return words


def build(tmp_path, vectors_file, name="out.tsv", **flags):
    options = cli_options.make_options(
        bsw.BuildSimilarWordsOptions,
        dict(vectors=str(vectors_file), output_file=str(tmp_path / name), **flags))
    account = bsw.build(options, report=lambda message: None)
    return account, tmp_path / name


def read_output(path):
    return {word: candidates for _, word, candidates in similar_words.read_similar_words(path)
            if word is not None}


def brute_force(words, vectors, top_k, min_similarity, same_length):
    """{word: candidates}: every pair's float64 cosine, sorted by (-score, row)."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = unit @ unit.T
    expected = {}
    for i, word in enumerate(words):
        others = [(-scores[i, j], j) for j in range(len(words)) if j != i
                  and (not same_length or len(words[j]) == len(word))
                  and scores[i, j] >= min_similarity]
        if others:
            expected[word] = [words[j] for _, j in sorted(others)[:top_k]]
    return expected


@pytest.mark.parametrize("same_length", [True, False])
@pytest.mark.parametrize("min_similarity", [-1.0, 0.3])
def test_top_k_matches_brute_force_with_blocks(tmp_path, same_length, min_similarity):
    words = random_words(70, seed=1)
    vectors = np.random.default_rng(2).normal(size=(70, 8))
    path = write_vectors(tmp_path / "v.txt", words, vectors)
    account, output = build(tmp_path, path, top_k=5, block_size=7, same_length=same_length,
                            min_similarity=min_similarity)
    expected = brute_force(words, vectors.round(6), 5, min_similarity, same_length)
    assert read_output(output) == expected
    assert list(read_output(output)) == [w for w in words if w in expected]  # file order
    assert account["words_written"] == len(expected)
    assert account["candidates_written"] == sum(map(len, expected.values()))
    assert account["words_kept"] == account["words_written"] + account["words_no_candidate"]


def test_output_is_deterministic_and_independent_of_block_size(tmp_path):
    words = random_words(50, seed=3)
    path = write_vectors(tmp_path / "v.txt", words, np.random.default_rng(4).normal(size=(50, 6)))
    outputs = [build(tmp_path, path, name=f"out{i}.tsv", block_size=size)[1].read_bytes()
               for i, size in enumerate([1024, 1024, 3, 1])]
    assert all(output == outputs[0] for output in outputs)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_ties_go_to_the_earlier_row(tmp_path):
    words = ["甲", "乙", "丙", "丁", "戊"]
    path = write_vectors(tmp_path / "v.txt", words, np.ones((5, 4)))
    _, output = build(tmp_path, path, top_k=2, block_size=2)
    assert read_output(output) == {"甲": ["乙", "丙"], "乙": ["甲", "丙"], "丙": ["甲", "乙"],
                                   "丁": ["甲", "乙"], "戊": ["甲", "乙"]}


def test_every_word_is_accounted_for(tmp_path):
    words = ["手机", "#标签", "电脑", "手机", "空", "喜欢", "讨厌", "游戏", "不读"]
    vectors = np.array([[1, 0], [1, 0], [1, .1], [1, 0], [0, 0], [0, 1], [.1, 1], [1, 1], [1, 1]])
    path = write_vectors(tmp_path / "v.txt", words, vectors)
    account, output = build(tmp_path, path, max_words=5, top_k=3, min_similarity=0.9)
    assert account["words_read"] == 8  # the ninth row is never read
    assert (account["dropped_unwritable"], account["dropped_duplicate"],
            account["dropped_zero_vector"], account["not_read_max_words"]) == (1, 1, 1, 1)
    assert account["words_kept"] == 5  # 手机 电脑 喜欢 讨厌 游戏
    # 游戏 is within cos 0.9 of no two-character word: cut, and then without a candidate.
    assert read_output(output) == {"手机": ["电脑"], "电脑": ["手机"], "喜欢": ["讨厌"],
                                   "讨厌": ["喜欢"]}
    assert account["words_no_candidate"] == 1
    # Of each word's 3 best, all but the one partner are below 0.9 (游戏: all 3).
    assert account["candidates_below_min_similarity"] == 4 * 2 + 3
    assert account["words_read"] == account["words_kept"] + sum(
        account[key] for key in bsw.ACCOUNT_ORDER if key.startswith("dropped_"))


def test_chinese_only_drops_punctuation_digits_and_latin_by_default(tmp_path):
    words = ["手机", "？", "啊", "iphone", "5s", "电脑", "３", "手机壳"]
    path = write_vectors(tmp_path / "v.txt", words, np.ones((8, 3)))
    account, output = build(tmp_path, path, same_length=False)
    assert sorted(read_output(output)) == ["啊", "手机", "手机壳", "电脑"]
    assert account["dropped_not_chinese"] == 4
    account, output = build(tmp_path, path, same_length=False, chinese_only=False)
    assert len(read_output(output)) == 8 and account["dropped_not_chinese"] == 0


def test_vocab_file_keeps_words_made_of_vocab_characters(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "手", "机", "电",
                                "脑", "o", "k", "ok", "a"]) + "\n", encoding="utf-8")
    words = ["手机", "电脑", "手表", "ok", "A", "机"]
    path = write_vectors(tmp_path / "v.txt", words, np.ones((6, 3)))
    account, output = build(tmp_path, path, vocab_file=str(vocab), same_length=False,
                            chinese_only=False)
    # 手表: 表 is not a token; ok: one token of two characters; A: lower-cased to the token a.
    assert read_output(output) == {"手机": ["电脑", "A", "机"], "电脑": ["手机", "A", "机"],
                                   "A": ["手机", "电脑", "机"], "机": ["手机", "电脑", "A"]}
    assert account["dropped_not_in_vocab"] == 2


@pytest.mark.parametrize("content, line, says", [
    (b"", 1, "is not `COUNT DIM`"),
    (b"3 two\n", 1, "is not `COUNT DIM`"),
    (b"2 3\na 1 2 3\nb 1 2\n", 3, "2 values after the word 'b', the header says 3"),
    (b"2 3\na 1 2 3\nb 1 x 3\n", 3, "'x' is not a number"),
    (b"2 3\na 1 2 3\nb 1 nan 3\n", 3, "inf or nan"),
    (b"3 3\na 1 2 3\nb 1 2 3\n", 3, "ends after 2 of the header's 3"),
    (b"1 3\na 1 2 3\nb 1 2 3\n", 3, "more vectors than the header's 1"),
    (b"2 3\na 1 2 3\n\xff 1 2 3\n", 3, "not UTF-8"),
])
def test_malformed_vectors_name_file_and_line(tmp_path, content, line, says):
    path = tmp_path / "v.txt"
    path.write_bytes(content)
    with pytest.raises(UserError) as error:
        build(tmp_path, path)
    assert f"{path}:{line}:" in str(error.value) and says in str(error.value)
    assert not (tmp_path / "out.tsv").exists()


def test_cli_error_is_one_line_with_exit_code_2(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"2 3\na 1 2 3\nb 1 2\n")
    done = subprocess.run([sys.executable, "-m", "data_gen.tools.build_similar_words",
                           f"--vectors={path}", f"--output_file={tmp_path / 'o.tsv'}"],
                          cwd=tmp_path, env=tool_env(), capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith(f"error: {path}:3: 2 values after the word 'b'")


@pytest.mark.parametrize("flags", [dict(top_k=0), dict(block_size=0), dict(max_words=-1),
                                   dict(min_similarity=1.5)])
def test_bad_flag_values_are_refused(tmp_path, flags):
    path = write_vectors(tmp_path / "v.txt", ["a", "b"], np.ones((2, 2)))
    with pytest.raises(UserError, match="--" + next(iter(flags))):
        build(tmp_path, path, **flags)


# --- data_gen.modes.mlm.similar_words: the loader ---------------------------------------------------

IDS = {char: index for index, char in enumerate("手机电脑喜欢爱好游戏表", start=100)}


def word_ids(word):
    """Character ids; None when a character is unknown (as the masker's tokenizer says)."""
    ids = [IDS.get(char) for char in word]
    return None if None in ids else ids


def test_loader_keeps_same_length_id_tuples_and_counts_every_drop(tmp_path):
    path = tmp_path / "similar.tsv"
    similar_words.write_similar_words(path, [
        ("手机", ["电脑", "爱", "手机", "电脑", "X光", "游戏"]),  # 爱: length 1; 手机: itself
        ("爱", ["好", "喜欢"]),
        ("喜欢", ["爱"]),              # no same-length candidate: dropped
        ("X光", ["手机"]),             # untokenizable word
        ("手机", ["游戏"]),            # the same ids again: dropped
    ], comments=["made by a test"])
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# made by a test\n手机\t电脑\t爱\t手机\t电脑\tX光\t游戏\n")
    table, counts = similar_words.load_similar_words(path, word_ids)
    assert table == {(100, 101): ((102, 103), (108, 109)), (106,): ((107,),)}
    assert counts == {
        "lines": 6, "skipped_lines": 1, "words_read": 5, "words_kept": 2,
        "words_dropped_untokenizable": 1, "words_dropped_duplicate": 1,
        "words_dropped_no_candidate": 1, "candidates_read": 11, "candidates_kept": 3,
        "candidates_dropped_untokenizable": 1, "candidates_dropped_length": 3,
        "candidates_dropped_same_as_word": 1, "candidates_dropped_duplicate": 1,
        "candidates_dropped_with_word": 2}


def test_loader_reads_the_builders_output(tmp_path):
    words = ["手机", "电脑", "游戏", "喜欢", "爱", "好"]
    vectors = np.array([[1, 0, 0], [1, .2, 0], [1, .5, 0], [0, 1, 0], [0, 0, 1], [0, .1, 1]])
    _, output = build(tmp_path, write_vectors(tmp_path / "v.txt", words, vectors), top_k=2,
                      min_similarity=0.5)
    table, counts = similar_words.load_similar_words(output, word_ids)
    assert table == {(100, 101): ((102, 103), (108, 109)), (102, 103): ((100, 101), (108, 109)),
                     (108, 109): ((102, 103), (100, 101)), (106,): ((107,),), (107,): ((106,),)}
    assert counts["skipped_lines"] == 2 and counts["words_dropped_no_candidate"] == 0


@pytest.mark.parametrize("content, says", [
    (b"# ok\n\n\xe6\x89\x8b\xe6\x9c\xba\n", ":3: no tab after the word"),
    (b"\t\xe7\x94\xb5\n", ":1: the word (first field) is empty"),
    (b"a\tb\t\n", ":1: empty candidate field"),
    (b"a\tb\nc\t\xff\n", ":2: not UTF-8"),
])
def test_loader_malformed_line_names_file_and_line(tmp_path, content, says):
    path = tmp_path / "similar.tsv"
    path.write_bytes(content)
    with pytest.raises(UserError) as error:
        similar_words.load_similar_words(path, word_ids)
    assert f"{path}{says}" in str(error.value)


def test_writer_refuses_what_the_format_cannot_hold(tmp_path):
    for entry in [("#词", ["词"]), ("词", ["a\tb"]), ("词", []), ("", ["词"])]:
        with pytest.raises(ValueError):
            similar_words.write_similar_words(tmp_path / "s.tsv", [entry])
    assert list(tmp_path.iterdir()) == []


def test_cached_load_matches_and_never_serves_a_stale_file(tmp_path, monkeypatch):
    monkeypatch.setattr(similar_words.tempfile, "gettempdir", lambda: str(tmp_path))
    path = tmp_path / "similar.tsv"
    path.write_text("北京\t上海\t天津\n", encoding="utf-8")
    word_ids = lambda text: [ord(char) for char in text]  # noqa: E731
    first = similar_words.load_similar_words_cached(str(path), word_ids, "vocab-a")
    assert first == similar_words.load_similar_words(str(path), word_ids)
    assert len(list(tmp_path.glob("zh_pretrain_similar_words_*.bin"))) == 1
    calls = []
    real = similar_words.load_similar_words
    monkeypatch.setattr(similar_words, "load_similar_words",
                        lambda *args: calls.append(args) or real(*args))
    assert similar_words.load_similar_words_cached(str(path), word_ids, "vocab-a") == first
    assert not calls  # served from the cache
    other = similar_words.load_similar_words_cached(str(path), word_ids, "vocab-b")
    assert other == first and len(calls) == 1  # another tokenizer key: loaded again
    path.write_text("北京\t上海\n", encoding="utf-8")  # edited: size (and mtime) change
    table, counts = similar_words.load_similar_words_cached(str(path), word_ids, "vocab-a")
    assert len(calls) == 2 and counts["candidates_read"] == 1
    assert table == {(ord("北"), ord("京")): ((ord("上"), ord("海")),)}
