"""data_gen.native._jieba: the C cutter gives the words of the Python reference
(data_gen.text.jieba_fast) and of jieba.lcut, and falls back to Python when asked."""
import importlib
import logging
import os
import random
import sys

import jieba
import pytest
from jieba import finalseg

from tests.testutil import data_gen_runs as util
from data_gen import native
from data_gen.text.jieba_dictionary_cache import initialize_default_tokenizer
from data_gen.text.jieba_fast import FastJiebaCutter

jieba.setLogLevel(logging.WARNING)
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CLUE_SAMPLE = os.path.join(REPO_ROOT, "..", "shared", "data", "corpus", "clue_small_sample.txt")

ASCII = ["Hello", "world", "iPhone12", "GPT-4", "abc_def", "C++", "C#", "AT&T", "x.y.z",
         "3.14", "50%", "12.5%", "1.", ".5", "v2.0.1", "+#&._%-", "a-b", "100", "e.g."]
PUNCT = ["，", "。", "！", "？", "：", "；", "（", "）", "【", "】", "《", "》", "“", "”", "、",
         ",", "!", "?", "(", ")", "@", "/", "~", "ｈｉ", "１２３", "٣.١٤"]
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\r", "\r\r\n", "\u3000", "\xa0", "\u2028", "\x1c"]
RARE = ["😀", "👍🏽", "𠀀", "𠮷", "𪚥", "\u4e00", "\u9fd5", "\u9fd6", "\u4dff", "é", "ελληνικά",
        "\x00", "\ufeff", "ｶﾀｶﾅ", "한국어"]
FIXED = ["", "中", "a", "1", " ", "\r\n", "😀", "南京市长江大桥", "韩冰冰说赵六六和钱七七去了王二二家",
         "价格3.14元涨了50%的abc-def+#&._%-x", "我在2023年用iPhone12拍了3.5%的照片", "T恤衫"]


def synthetic_lines(count=400, seed=1234):
    """Mixed text: Chinese sentences, ASCII words, numbers, punctuation, spaces,
    emoji and CJK Extension B, glued with and without separators."""
    rng = random.Random(seed)
    chinese = [s.strip("。") for s in util.SENTENCES]
    lines = list(FIXED)
    for _ in range(count):
        pieces = []
        for _ in range(rng.randint(1, 12)):
            pool = rng.choice([chinese, chinese, ASCII, PUNCT, SPACES, RARE])
            piece = rng.choice(pool)
            if pool is chinese and rng.random() < 0.5:  # a piece of a sentence
                start = rng.randrange(len(piece))
                piece = piece[start:start + rng.randint(1, 6)]
            pieces.append(piece)
        lines.append("".join(pieces) if rng.random() < 0.6 else rng.choice(["", " "]).join(pieces))
    # long runs of Chinese without punctuation or spaces
    lines.append("".join(rng.choice(chinese) for _ in range(300)))
    lines.append("".join(rng.choice(chinese) + rng.choice(ASCII) for _ in range(100)))
    return lines


@pytest.fixture(scope="module")
def tokenizer():
    return initialize_default_tokenizer(jieba)


@pytest.fixture
def native_module(monkeypatch):
    """The C module (tests of the C path also run under ZH_PRETRAIN_PURE_PYTHON=1)."""
    try:
        module = importlib.import_module("data_gen.native._jieba")
    except ImportError:
        pytest.skip("C extension not built")
    monkeypatch.delenv(native.DISABLE_VARIABLE, raising=False)
    return module


def private_tokenizer(tokenizer):
    """A jieba.Tokenizer with its own copy of the default dictionary."""
    private = jieba.Tokenizer()
    private.FREQ, private.total, private.initialized = dict(tokenizer.FREQ), tokenizer.total, True
    return private


def cutters(tokenizer, use_hmm):
    c_cutter = FastJiebaCutter(tokenizer, use_hmm, use_native=True)
    py_cutter = FastJiebaCutter(tokenizer, use_hmm, use_native=False)
    assert c_cutter.native and not py_cutter.native
    return c_cutter, py_cutter


def assert_same_words(tokenizer, lines, use_hmm):
    c_cutter, py_cutter = cutters(tokenizer, use_hmm)
    for line in lines:
        words = c_cutter.cut(line)
        assert words == py_cutter.cut(line), line
        assert words == tokenizer.lcut(line, HMM=use_hmm), line
        assert "".join(words) == line and all(words)


def unknown_han_lines(tokenizer):
    """Runs of Han characters that neither the dictionary nor the HMM's emission
    tables know: every HMM score is then near k * MIN_FLOAT, so ties are common."""
    unknown = [chr(c) for c in range(0x9F00, 0x9FD6)
               if chr(c) not in tokenizer.FREQ and all(chr(c) not in e for e in finalseg.emit_P.values())]
    assert len(unknown) >= 8
    rng = random.Random(5)
    return ["".join(rng.choice(unknown + ["的", "中国", "a1"]) for _ in range(n)) for n in range(1, 60)]


@pytest.mark.parametrize("use_hmm", [True, False])
def test_c_equals_python_and_jieba_on_synthetic_text(native_module, tokenizer, use_hmm):
    assert_same_words(tokenizer, synthetic_lines() + unknown_han_lines(tokenizer), use_hmm)


@pytest.mark.parametrize("use_hmm", [True, False])
def test_c_equals_python_and_jieba_on_clue_sample(native_module, tokenizer, use_hmm):
    if not os.path.exists(CLUE_SAMPLE):
        pytest.skip(f"{CLUE_SAMPLE} not present (the shared data set is not beside the repo)")
    with open(CLUE_SAMPLE, encoding="utf-8") as reader:
        lines = [line.strip() for line in reader]
    assert_same_words(tokenizer, [line for line in lines if line][:3000], use_hmm)


def test_hmm_ties_follow_jieba(native_module, monkeypatch):
    """HMM tables of small integers make exact ties between paths common; with an
    empty dictionary every block goes to the HMM (B M E S tie rules)."""
    rng = random.Random(11)
    chars, values = "一二三四五六七八九十", [0.0, -1.0, -2.0]
    private = jieba.Tokenizer()
    private.FREQ, private.total, private.initialized = {}, 1, True
    for _ in range(12):
        monkeypatch.setattr(finalseg, "start_P", {s: rng.choice(values) for s in "BMES"})
        monkeypatch.setattr(finalseg, "trans_P", {
            a: {b: rng.choice(values) for b in nexts}
            for a, nexts in (("B", "EM"), ("E", "BS"), ("M", "EM"), ("S", "BS"))})
        monkeypatch.setattr(finalseg, "emit_P", {
            s: {c: rng.choice(values) for c in chars if rng.random() < 0.8} for s in "BMES"})
        lines = ["".join(rng.choice(chars) for _ in range(rng.randint(1, 25))) for _ in range(40)]
        assert_same_words(private, lines, True)


def test_user_dictionary_and_later_changes(native_module, tokenizer, tmp_path):
    private = private_tokenizer(tokenizer)
    user_dict = tmp_path / "user.txt"
    user_dict.write_text("胡辣汤味道好 100000\n人工智能技术正在 5000\n长江大桥南京段 20 n\n"
                         "𠮷野家牛肉饭 300\n", encoding="utf-8")
    private.load_userdict(str(user_dict))
    text = "这家餐厅的胡辣汤味道好。人工智能技术正在改变世界，长江大桥南京段在𠮷野家牛肉饭旁"
    lines = [text] + synthetic_lines(100, seed=7)
    for use_hmm in (True, False):
        assert_same_words(private, lines, use_hmm)
        words = FastJiebaCutter(private, use_hmm, use_native=True).cut(text)
        assert {"胡辣汤味道好", "人工智能技术正在", "长江大桥南京段"} <= set(words)
        assert "𠮷" in words  # outside re_han's range: never part of a dictionary word
    # The Python path reads FREQ live; the C trie follows it (any change on 3.11).
    c_cutter, py_cutter = cutters(private, True)
    private.add_word("改变世界的力量", 50000)
    changed = "人工智能技术正在改变世界的力量"
    assert c_cutter.cut(changed) == py_cutter.cut(changed)
    assert "改变世界的力量" in c_cutter.cut(changed)
    if sys.version_info < (3, 12):  # a changed count without a new key
        private.FREQ["改变世界的力量"] = 0
        assert c_cutter.cut(changed) == py_cutter.cut(changed)
        assert "改变世界的力量" not in c_cutter.cut(changed)


def test_unusual_counts_behave_as_in_python(native_module, tokenizer):
    private = private_tokenizer(tokenizer)
    text = "中华人民共和国成立于一九四九年，北京大学的图书馆"
    private.FREQ["北京大学"] = 10 ** 400  # too large for a double: math.log still copes
    private.FREQ["图书馆"] = 12345.5
    private.FREQ["成立"] = True
    for use_hmm in (True, False):
        c_cutter, py_cutter = cutters(private, use_hmm)
        assert c_cutter.cut(text) == py_cutter.cut(text)
    private.FREQ["北京大学"] = -5
    c_cutter, py_cutter = cutters(private, True)
    with pytest.raises(ValueError, match="math domain error"):
        py_cutter.cut(text)
    with pytest.raises(ValueError, match="math domain error"):
        c_cutter.cut(text)
    assert c_cutter.cut("你好") == py_cutter.cut("你好")  # the cutter still works
    with pytest.raises(TypeError):
        c_cutter.cut(b"bytes")


def test_force_split_words_are_honoured(native_module, tokenizer):
    text = "韩冰冰说赵六六和钱七七去了王二二家"
    c_cutter, py_cutter = cutters(tokenizer, True)
    hmm_words = [w for w in c_cutter.cut(text) if len(w) > 1 and not tokenizer.FREQ.get(w)]
    assert hmm_words
    finalseg.Force_Split_Words.add(hmm_words[0])
    try:
        words = c_cutter.cut(text)
        assert words == py_cutter.cut(text) == tokenizer.lcut(text)
        assert hmm_words[0] not in words
    finally:
        finalseg.Force_Split_Words.discard(hmm_words[0])


def test_no_leak_over_many_cuts(native_module, tokenizer):
    private = private_tokenizer(tokenizer)  # with counts that take the slow path too
    private.FREQ["中国"], private.FREQ["北京"] = 10 ** 400, 200000.5
    lines = synthetic_lines(50, seed=3) + ["中国北京的" * 20] * 50
    c_cutter = FastJiebaCutter(private, True, use_native=True)
    for _ in range(2):
        for line in lines:
            c_cutter.cut(line)
    refs = [sys.getrefcount(x) for x in (private.FREQ, private.FREQ["中国"], lines[-1])]
    # A leak grows the process in every window of 20,000 cuts; memory that other threads of
    # this test process take (TensorFlow's, from an earlier test file) shows up in one at most.
    growth_kib = []
    for _ in range(3):
        before = util.resident_bytes() // 1024
        for i in range(20000):
            c_cutter.cut(lines[i % len(lines)])
        growth_kib.append(util.resident_bytes() // 1024 - before)
    assert [sys.getrefcount(x) for x in (private.FREQ, private.FREQ["中国"], lines[-1])] == refs
    assert min(growth_kib) < 4096, growth_kib


def test_use_native_selects_the_path(native_module, tokenizer, monkeypatch):
    assert FastJiebaCutter(tokenizer).native
    assert not FastJiebaCutter(tokenizer, use_native=False).native
    monkeypatch.setenv(native.DISABLE_VARIABLE, "1")
    pure = FastJiebaCutter(tokenizer)
    assert not pure.native
    assert pure.cut("南京市长江大桥") == ["南京市", "长江大桥"]
    # An explicit use_native=True wins over the environment.
    assert FastJiebaCutter(tokenizer, use_native=True).native


def test_python_path_without_the_c_module(tokenizer, monkeypatch):
    monkeypatch.delenv(native.DISABLE_VARIABLE, raising=False)
    monkeypatch.setitem(sys.modules, "data_gen.native._jieba", None)  # as if not built
    assert not FastJiebaCutter(tokenizer).native
    with pytest.raises(ImportError, match="native._jieba is not built"):
        FastJiebaCutter(tokenizer, use_native=True)
