"""data_gen.text.segmentation / jieba_fast: the fast path gives jieba's own words."""
import jieba
import pytest

from tests.testutil import data_gen_runs as util
from conftest import shared_path
from data_gen.text.segmentation import SegmenterError, make_segmenter

MIXED = ["Hello world 3.5% 中华人民共和国 abc-def  T恤 iPhone12 \r\n x", "", "   ",
         "南京市长江大桥", "韩冰冰说赵六六和钱七七去了王二二家", "ｈｉ，我们 playing 😀 ελληνικά"]


@pytest.mark.parametrize("use_hmm", [True, False])
def test_fast_cut_equals_jieba_on_test_sentences(use_hmm):
    fast = make_segmenter("jieba", use_hmm=use_hmm)
    for text in util.SENTENCES + MIXED:
        assert fast.words(text) == jieba.lcut(text, HMM=use_hmm), text


def test_fast_cut_equals_jieba_on_shared_corpus():
    path = shared_path("corpus", "clue_small_sample.txt")
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    lines = [line for line in lines if line][:1500]
    fast = make_segmenter("jieba")
    reference = make_segmenter("jieba_reference")
    assert [fast.words(line) for line in lines] == [reference.words(line) for line in lines]


def test_word_ids_by_char_and_user_dict(tmp_path):
    user_dict = tmp_path / "user.txt"
    user_dict.write_text("胡辣汤味道 100000\n", encoding="utf-8")
    plain = make_segmenter("jieba")
    custom = make_segmenter("jieba", user_dict=str(user_dict))
    text = "这家餐厅的胡辣汤味道很好"
    assert "胡辣汤味道" not in plain.words(text)
    assert "胡辣汤味道" in custom.words(text)
    ids = custom.word_ids_by_char(text)
    assert len(ids) == len(text) and len(set(ids[5:10])) == 1 and ids[4] != ids[5]
    assert make_segmenter("none").word_ids_by_char("abc") == [0, 1, 2]
    with pytest.raises(SegmenterError, match="--jieba_user_dict=.*not found"):
        make_segmenter("jieba", user_dict=str(tmp_path / "missing.txt"))
    with pytest.raises(SegmenterError, match="unknown"):
        make_segmenter("ltp")
