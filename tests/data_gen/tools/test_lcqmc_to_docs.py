"""data_gen.tools.lcqmc_to_docs: document structure, dedup, no eval leakage, malformed lines."""
import subprocess
import sys

import pytest

from data_gen.tools import lcqmc_to_docs as l2d

# TRAIN_LINES holds malformed lines on purpose (2 of 8): above the readers' 1% default share
FIXTURE_SHARE = "0.5"


def convert(*args, **kwargs):
    return l2d.convert(*args, **dict({"max_malformed_share": float(FIXTURE_SHARE)}, **kwargs))

TRAIN_LINES = [
    "text_a\ttext_b\tlabel",            # 1: header
    "怎么办银行卡\t如何办理银行卡\t1",      # 2: paraphrase -> one 2-sentence document
    "手机怎么充电\t哪里可以吃火锅\t0",      # 3: two 1-sentence documents
    "如何办理银行卡\t怎么办银行卡\t1",      # 4: same pair reversed -> duplicate document
    "这是坏行没有标签",                    # 5: malformed (1 field)
    "哪里可以吃火锅\t怎么办银行卡\t0",      # 6: both sentences already written -> removed
    "手机怎么充电\t今天天气好吗\t2",        # 7: malformed label
    "今天天气好吗\t今天天气好吗\t1",        # 8: identical texts -> one 1-sentence document
    "学英语难吗\t学英语难不难\t1",          # 9: paraphrase
]
DEV_LINES = ["开发集的问题一\t开发集的问题二\t1"]
TEST_LINES = ["测试集的问题一\t测试集的问题二\t0"]


def make_lcqmc(tmp_path, train_lines=TRAIN_LINES, extra_bytes=b""):
    directory = tmp_path / "lcqmc"
    directory.mkdir()
    (directory / "train.txt").write_bytes(
        ("\r\n".join(train_lines) + "\r\n").encode("utf-8") + extra_bytes)
    (directory / "dev.txt").write_text("\n".join(DEV_LINES) + "\n", encoding="utf-8")
    (directory / "test.txt").write_text("\n".join(TEST_LINES) + "\n", encoding="utf-8")
    return directory


def read_documents(path):
    text = path.read_text(encoding="utf-8")
    return [block.split("\n") for block in text.strip("\n").split("\n\n")]


def test_documents_structure_and_dedup(tmp_path):
    directory = make_lcqmc(tmp_path)
    output = tmp_path / "docs.txt"
    reports = []
    account = convert(str(directory), str(output), report=reports.append)
    assert read_documents(output) == [
        ["怎么办银行卡", "如何办理银行卡"],
        ["手机怎么充电"],
        ["哪里可以吃火锅"],
        ["今天天气好吗"],
        ["学英语难吗", "学英语难不难"],
    ]
    assert account["lines_read"] == 9
    assert account["header_lines"] == 1
    assert account["malformed_lines"] == 2
    assert account["pairs"] == 6
    assert account["paraphrase_pairs"] == 4 and account["non_paraphrase_pairs"] == 2
    assert account["duplicate_documents_removed"] == 1
    # line 6: both sentences seen; line 8: the duplicate of its own text.
    assert account["repeated_sentences_removed"] == 3
    assert account["documents_written"] == 5
    assert account["two_sentence_documents"] == 2 and account["one_sentence_documents"] == 3
    assert account["sentences_written"] == 7
    assert not [p for p in tmp_path.iterdir() if "incomplete" in p.name]


def test_sentence_of_a_paraphrase_pair_is_not_repeated_as_a_single(tmp_path):
    lines = ["甲问题\t乙问题\t0", "甲问题\t丙问题\t1"]
    directory = make_lcqmc(tmp_path, lines)
    output = tmp_path / "docs.txt"
    convert(str(directory), str(output), report=lambda m: None)
    # 甲 belongs to the paraphrase document, so it is not also a single.
    assert read_documents(output) == [["乙问题"], ["甲问题", "丙问题"]]


def test_noparaphrase_documents_writes_every_distinct_sentence_once_alone(tmp_path, repo_root):
    """For sentence-order prediction: no document pairs two paraphrases (their order means
    nothing); the same distinct sentences as the default, each once, in file order."""
    directory = make_lcqmc(tmp_path)
    output = tmp_path / "sentences.txt"
    account = convert(str(directory), str(output), report=lambda m: None,
                          paraphrase_documents=False)
    documents = read_documents(output)
    assert documents == [["怎么办银行卡"], ["如何办理银行卡"], ["手机怎么充电"],
                         ["哪里可以吃火锅"], ["今天天气好吗"], ["学英语难吗"], ["学英语难不难"]]
    convert(str(directory), str(tmp_path / "default.txt"), report=lambda m: None)
    default = read_documents(tmp_path / "default.txt")
    assert sorted(d[0] for d in documents) == sorted({s for d in default for s in d})
    # lines 4 (2), 6 (2) and 8 (1): sentences already written.
    assert account["repeated_sentences_removed"] == 5
    assert account["duplicate_documents_removed"] == 0
    assert account["documents_written"] == account["one_sentence_documents"] == 7
    assert account["two_sentence_documents"] == 0
    cli = subprocess.run([sys.executable, "-m", "data_gen.tools.lcqmc_to_docs",
                          f"--lcqmc_dir={directory}", f"--output_file={tmp_path / 'cli.txt'}",
                          "--noparaphrase_documents", f"--max_malformed_share={FIXTURE_SHARE}"],
                         capture_output=True, text=True,
                         cwd=repo_root)
    assert cli.returncode == 0, cli.stderr
    assert "two_sentence_documents=0" in cli.stdout
    assert read_documents(tmp_path / "cli.txt") == documents


def test_condition_column_is_read_and_left_out_of_the_text(tmp_path):
    """A fine-tuning file with a 4th (condition) field gives the same documents."""
    conditional = [TRAIN_LINES[0] + "\tcondition"] + [
        line + "\t1" if line.count("\t") == 2 else line for line in TRAIN_LINES[1:]]
    (tmp_path / "plain").mkdir()
    (tmp_path / "conditional").mkdir()
    plain_docs, conditional_docs = tmp_path / "plain.txt", tmp_path / "conditional.txt"
    plain = convert(str(make_lcqmc(tmp_path / "plain")), str(plain_docs),
                        report=lambda m: None)
    with_condition = convert(str(make_lcqmc(tmp_path / "conditional", conditional)),
                                 str(conditional_docs), report=lambda m: None)
    assert conditional_docs.read_bytes() == plain_docs.read_bytes()
    assert with_condition["condition_fields_ignored"] == 6  # the pairs of lines 2-4, 6, 8, 9
    assert plain["condition_fields_ignored"] == 0
    for key in l2d.ACCOUNT_ORDER:
        if key != "condition_fields_ignored":
            assert with_condition[key] == plain[key], key


def test_malformed_lines_reported_with_file_and_line(tmp_path):
    directory = make_lcqmc(tmp_path, extra_bytes=b"\xff\xfe bad\tbytes\t1\n")
    reports = []
    account = convert(str(directory), str(tmp_path / "docs.txt"), report=reports.append)
    train = str(directory / "train.txt")
    assert any(f"{train}:5:" in r and "3 or 4 tab-separated fields" in r for r in reports), reports
    assert any(f"{train}:7:" in r and "label must be 0 or 1" in r for r in reports), reports
    assert any(f"{train}:10:" in r and "not UTF-8" in r for r in reports), reports
    assert account["malformed_lines"] == 3
    # Lines 2-9 are not reported as malformed.
    assert not any(f"{train}:{n}:" in r for r in reports for n in (1, 2, 3, 4, 6, 8, 9))


def test_eval_splits_excluded_by_default_and_need_a_flag(tmp_path):
    directory = make_lcqmc(tmp_path)
    output = tmp_path / "docs.txt"
    convert(str(directory), str(output), report=lambda m: None)
    text = output.read_text(encoding="utf-8")
    assert "开发集" not in text and "测试集" not in text

    with pytest.raises(l2d.LcqmcError, match="--allow_eval_splits"):
        convert(str(directory), str(output), splits="train,dev", report=lambda m: None)
    reports = []
    convert(str(directory), str(output), splits="train,dev,test", allow_eval_splits=True,
                report=reports.append)
    text = output.read_text(encoding="utf-8")
    assert "开发集的问题一\n开发集的问题二" in text
    assert "测试集的问题一" in text and "测试集的问题二" in text
    assert any("WARNING" in r and "dev, test" in r for r in reports)


def test_missing_split_file_is_a_clear_error(tmp_path):
    directory = tmp_path / "empty"
    directory.mkdir()
    with pytest.raises(l2d.LcqmcError, match="train.txt"):
        convert(str(directory), str(tmp_path / "docs.txt"))


def test_cli_prints_account_and_refuses_eval_splits(tmp_path, repo_root):
    directory = make_lcqmc(tmp_path)
    output = tmp_path / "docs.txt"
    base = [sys.executable, "-m", "data_gen.tools.lcqmc_to_docs", f"--lcqmc_dir={directory}",
            f"--output_file={output}", f"--max_malformed_share={FIXTURE_SHARE}"]
    result = subprocess.run(base, cwd=repo_root, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "lines_read=9" in result.stdout and "malformed_lines=2" in result.stdout
    assert "documents_written=5" in result.stdout
    assert "train.txt:5:" in result.stderr
    result = subprocess.run(base + ["--splits=train,test"], cwd=repo_root, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and "--allow_eval_splits" in result.stderr


def test_real_lcqmc_train_only_has_no_dev_only_sentences(tmp_path):
    from tests.conftest import shared_path
    lcqmc_dir = shared_path("lcqmc")
    output = tmp_path / "lcqmc_docs.txt"
    account = convert(str(lcqmc_dir), str(output), report=lambda m: None)
    assert account["malformed_lines"] == 0 and account["pairs"] > 200000
    train_sentences = set()
    with open(lcqmc_dir / "train.txt", encoding="utf-8") as reader:
        for line in reader:
            train_sentences.update(s.strip() for s in line.split("\t")[:2])
    written = [s for s in output.read_text(encoding="utf-8").split("\n") if s]
    assert len(written) == account["sentences_written"]
    assert set(written) <= train_sentences  # nothing from dev/test that train lacks
    assert len(set(written)) == len(train_sentences)  # every train sentence kept


def test_more_malformed_lines_than_the_share_stop_the_conversion(tmp_path):
    directory = make_lcqmc(tmp_path)
    with pytest.raises(l2d.LcqmcError, match=r"train.txt: 2 of 8 lines \(25.0%\) are malformed, "
                                             r"more than --max_malformed_share=0.01; the first "
                                             r"is line 5"):
        l2d.convert(str(directory), str(tmp_path / "docs.txt"), report=lambda m: None)
    assert not (tmp_path / "docs.txt").exists()
