"""data_gen.text.tokenization: Google-vocab-compatible tokenization."""
import pytest

from conftest import shared_path
from data_gen.text import tokenization as tk


def _vocab(tmp_path, tokens):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return path


BASE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "want", "##want", "##ed", "wa", "un",
        "runn", "##ing", ",", "hello", "中", "国", "人", "!", "hi", "##!", "ab"]


def test_wordpiece_greedy_longest_match_and_unk(tmp_path):
    tokenizer = tk.FullTokenizer(_vocab(tmp_path, BASE))
    assert tokenizer.tokenize("UNwant\u00e9d,running") == ["un", "##want", "##ed", ",", "runn",
                                                             "##ing"]
    assert tokenizer.tokenize("unwantedX") == ["[UNK]"]  # no piece for "x": whole word [UNK]
    assert tokenizer.tokenize("a" * 201) == ["[UNK]"]  # longer than 200 characters


def test_basic_split_cjk_punct_control_and_whitespace():
    basic = tk.BasicTokenizer(do_lower_case=True)
    text = " \tHeLLo!中国人\u200b\x00 wor\ufffdld\r\n  \u00c1b "
    assert basic.tokenize(text) == ["hello", "!", "中", "国", "人", "world", "ab"]
    cased = tk.BasicTokenizer(do_lower_case=False)
    assert cased.tokenize("HeLLo \u00c1b") == ["HeLLo", "\u00c1b"]  # no lower, accents kept


def test_full_width_to_half_width_is_optional(tmp_path):
    vocab = _vocab(tmp_path, BASE + ["ｈ", "##ｉ"])
    assert tk.FullTokenizer(vocab).tokenize("ｈｉ！") == ["ｈ", "##ｉ", "[UNK]"]
    folded = tk.FullTokenizer(vocab, full_width_to_half=True)
    assert folded.tokenize("ｈｉ！\u3000中") == ["hi", "!", "中"]


def test_offsets_point_into_normalized_text(tmp_path):
    tokenizer = tk.FullTokenizer(_vocab(tmp_path, BASE))
    normalized, tokens, starts = tokenizer.tokenize_with_offsets("Hi \x00中国 running!")
    assert normalized == "hi 中国 running!"
    assert tokens == ["hi", "中", "国", "runn", "##ing", "!"]
    assert starts == [0, 3, 4, 6, 6, 13]
    for token, start in zip(tokens, starts):
        if not token.startswith("##"):  # a "##" piece shares its word's start
            assert normalized[start:].startswith(token)


def test_ids_round_trip_and_unknown_id(tmp_path):
    tokenizer = tk.FullTokenizer(_vocab(tmp_path, BASE))
    tokens = tokenizer.tokenize("中国人 hello")
    ids = tokenizer.convert_tokens_to_ids(tokens)
    assert ids == [14, 15, 16, 13]
    assert tokenizer.convert_ids_to_tokens(ids) == tokens
    assert tokenizer.convert_tokens_to_ids(["nope"]) == [1]
    with pytest.raises(KeyError, match="outside vocab"):
        tokenizer.convert_ids_to_tokens([len(BASE)])
    assert tokenizer.inv_vocab[4] == "[MASK]"


def test_missing_special_tokens_are_named(tmp_path):
    path = _vocab(tmp_path, ["[PAD]", "[UNK]", "[CLS]", "hello"])
    with pytest.raises(tk.VocabError) as error:
        tk.FullTokenizer(path)
    assert "[SEP] [MASK]" in str(error.value)
    assert str(path) in str(error.value)


def test_vocab_blank_line_is_an_error_with_line_number(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n\n[CLS]\n", encoding="utf-8")
    with pytest.raises(tk.VocabError, match=r"vocab.txt:3: empty line"):
        tk.load_vocab(path)


def test_vocab_with_bom_crlf_and_unicode_whitespace_token(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes("\ufeff[PAD]\r\n[UNK]\r\n\u2028\r\n[CLS]\r\n".encode("utf-8"))
    vocab = tk.load_vocab(path)
    assert list(vocab.items()) == [("[PAD]", 0), ("[UNK]", 1), ("\u2028", 2), ("[CLS]", 3)]


def test_character_classes():
    assert tk.is_cjk_char("中") and tk.is_cjk_char("\U00020000")
    assert not tk.is_cjk_char("a") and not tk.is_cjk_char("。")
    assert tk.is_punctuation("。") and tk.is_punctuation("$") and not tk.is_punctuation("a")
    assert tk.is_whitespace("\u3000") and tk.is_whitespace("\t")
    assert tk.is_control("\x07") and tk.is_control("\u200b") and not tk.is_control("\t")


def test_google_chinese_vocab_matches_reference_tokens():
    tokenizer = tk.FullTokenizer(shared_path("vocab", "bert_chinese_vocab.txt"))
    assert len(tokenizer.vocab) == 21128
    assert [tokenizer.vocab[t] for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")] == [
        0, 100, 101, 102, 103]
    tokens = tokenizer.tokenize("我爱北京天安门！Hello running 😀")
    assert tokens == ["我", "爱", "北", "京", "天", "安", "门", "！", "hello", "running", "[UNK]"]
    assert not any(token.startswith("##") for token in tokenizer.tokenize("自然语言处理"))
