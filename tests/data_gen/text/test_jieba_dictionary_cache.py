"""The compact jieba dictionary cache gives jieba's own (FREQ, total), and a bad cache is rebuilt."""
import jieba

from data_gen.text import jieba_dictionary_cache as cache


def test_cache_round_trip_equals_jieba_and_survives_corruption(tmp_path, monkeypatch):
    monkeypatch.setattr(cache.tempfile, "gettempdir", lambda: str(tmp_path))
    first = cache.initialize_default_tokenizer(jieba)       # builds and writes the cache
    cache_files = list(tmp_path.glob("zh_pretrain_jieba_freq_*.bin"))
    # ours only: jieba's own cache, whose failed write logs a traceback, is not written
    assert [path.name for path in tmp_path.iterdir()] == [cache_files[0].name]
    reference = jieba.Tokenizer()
    reference.initialize()
    second = cache.initialize_default_tokenizer(jieba)      # reads the cache
    for tokenizer in (first, second):
        assert tokenizer.initialized
        assert tokenizer.total == reference.total
        assert tokenizer.FREQ == reference.FREQ
    text = "南京市长江大桥于1968年建成通车，全长6772米。"
    assert second.lcut(text) == reference.lcut(text)

    cache_files[0].write_bytes(cache_files[0].read_bytes()[:1000])  # truncated cache
    assert cache._read(str(cache_files[0])) is None
    rebuilt = cache.initialize_default_tokenizer(jieba)
    assert rebuilt.FREQ == reference.FREQ
    assert cache._read(str(cache_files[0])) is not None              # rewritten whole
