"""data_gen's account says which characters of the corpus the vocab maps to [UNK], how many,
and warns above 3% of the characters, the same for any worker count."""
from tests.testutil import data_gen_runs as util
from data_gen.text import vocab_gaps
from data_gen.config import GenerationConfig
from data_gen.create_pretraining_data import run
from data_gen.runner.run_account import format_account


def _run(tmp_path, docs, workers=1):
    vocab = util.write_vocab(tmp_path)
    corpus = util.write_corpus(tmp_path / "corpus.txt", docs)
    return run(GenerationConfig(
        input_file=str(corpus), output_file=str(tmp_path / f"w{workers}" / "out.tfrecord"),
        vocab_file=str(vocab), max_seq_length=64, max_predictions_per_seq=10, dupe_factor=1,
        num_workers=workers, chunk_bytes=1024, progress=False))


def test_unknown_characters_are_counted_with_the_most_frequent_first(tmp_path):
    docs = util.documents(40, 3)
    docs[0][0] = "“" + docs[0][0] + "”"       # “ and ” are not in the test vocab
    docs[5][1] = "“" + docs[5][1] + "”…"
    characters = sum(len("".join(sentence.split())) for doc in docs for sentence in doc)
    accounts = [_run(tmp_path, docs, workers) for workers in (1, 2)]
    for account in accounts:
        assert account["characters"] == characters
        assert account["unknown_characters"] == 5
        assert account["unknown_top"] == [["“", 2], ["”", 2], ["…", 1]]
    (line,) = [l for l in format_account(accounts[0]).splitlines() if "[UNK]" in l]
    assert line == (f"[data_gen] vocab: 5 of {characters} characters ({5 / characters:.2%}) "
                    "map to [UNK]; most frequent: “ 2, ” 2, … 1")
    assert "WARNING" not in format_account(accounts[0])


def test_above_three_percent_the_account_warns_with_the_fix(tmp_path):
    docs = [["“" * 10 + sentence for sentence in doc] for doc in util.documents(20, 3)]
    account = _run(tmp_path, docs)
    assert account["unknown_characters"] / account["characters"] > vocab_gaps.WARN_SHARE
    warning = [l for l in format_account(account).splitlines() if "WARNING" in l][0]
    assert "above 3%" in warning
    assert f"--extend_from_corpus={tmp_path / 'corpus.txt'}" in warning
