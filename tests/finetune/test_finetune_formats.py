"""Input files of fine-tuning tasks (finetune/formats.py): detection, readers, accounts, errors."""
import importlib.util
import json
from collections import Counter

import pytest

from common.cli_options import UserError
from conftest import REPO_ROOT, shared_path
from finetune import formats

SAMPLES = REPO_ROOT / "data" / "sample" / "tasks"


def write(tmp_path, name, content):
    """Writes str (UTF-8, line ends as given) or bytes; returns the path as str."""
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return str(path)


def read_text(path, task="classification", **kwargs):
    return formats.read_text_examples(path, task, log_fn=lambda message: None, **kwargs)


def read_tagged(path, **kwargs):
    return formats.read_tagged_examples(path, log_fn=lambda message: None, **kwargs)


def error_of(function, *args, **kwargs):
    with pytest.raises(formats.DataFormatError) as raised:
        function(*args, **kwargs)
    return str(raised.value)


# ---- detect_format ----------------------------------------------------------------------
@pytest.mark.parametrize("task, content, expected", [
    ("classification", "label\ttext_a\n1\t好\n", "tsv"),
    ("pair", "text_a\ttext_b\tlabel\n我\t你\t1\n", "tsv"),
    ("pair", "怎么办\t如何是好\t1\n", "lcqmc"),
    ("pair", "怎么办\t如何是好\t1\t0\n", "lcqmc"),
    ("pair", "q1\tq2\tgold\n怎么办\t如何\t1\n", "tsv"),
    ("classification", "怎么办\t如何是好\t1\n", "tsv"),
    ("classification", "\ufefflabel,text_a\n1,好\n", "csv"),
    ("classification", "\n\nlabel\ttext_a\n", "tsv"),
    ("classification", '{"sentence": "好", "label": "1", "label_desc": "pos"}\n', "jsonl"),
    ("classification", '{"id": 3, "text": "好"}\n', "jsonl"),
    ("pair", '{"sentence1": "a", "sentence2": "b"}\n', "jsonl"),
    ("ner", '{"text": "张三", "label": {"name": {"张三": [[0, 1]]}}}\n', "cluener"),
    ("ner", '{"id": 0, "text": "张三"}\n', "cluener"),
    ("classification", '{"text": "张三", "label": {"name": {"张三": [[0, 1]]}}}\n', "cluener"),
    ("ner", "张 B-PER\n三 I-PER\n", "conll"),
    ("ner", "张\tB_PER\n", "conll"),
    ("ner", "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\n", "conll"),
    ("ner", "\r\n\r\n中 O\r\n", "conll"),
])
def test_detect_format_from_the_content(tmp_path, task, content, expected):
    # The file name says .txt everywhere: only the content counts.
    assert formats.detect_format(write(tmp_path, "data.txt", content), task) == expected


def test_given_field_names_make_the_first_line_a_header_not_lcqmc(tmp_path):
    path = write(tmp_path, "pairs.txt", "q1\tq2\t7\n怎么办\t如何\t1\n")
    assert formats.detect_format(path, "pair") == "lcqmc"
    assert formats.detect_format(path, "pair", text_fields=["q1", "q2"]) == "tsv"


def test_undetectable_content_names_the_formats_and_the_flag(tmp_path):
    path = write(tmp_path, "plain.txt", "\n只有一句话\n")
    message = error_of(formats.detect_format, path, "classification")
    assert message.startswith(f"{path}:2: cannot tell the format of this classification file")
    assert "--input_format" in message
    for name in formats.FORMATS:
        assert name in message
    ner_message = error_of(formats.detect_format, write(tmp_path, "t.tsv", "label\ttext\n"), "ner")
    assert "this ner file" in ner_message and "--input_format" in ner_message


def test_empty_file_cannot_be_detected(tmp_path):
    path = write(tmp_path, "empty.tsv", "\n  \n")
    assert error_of(formats.detect_format, path, "pair").startswith(f"{path}: the file holds no")


def test_format_and_task_must_fit(tmp_path):
    path = write(tmp_path, "a.tsv", "label\ttext_a\n1\t好\n")
    message = error_of(read_text, path, "pair", format="conll")
    assert message.startswith(f"{path}: the conll format cannot hold pair data")
    assert "tsv or csv or jsonl or lcqmc" in message and "--input_format" in message
    assert "classification data" in error_of(read_text, path, format="lcqmc")
    assert "cannot hold ner data" in error_of(read_tagged, path, format="tsv")
    assert "unknown input format 'xml'" in error_of(read_text, path, format="xml")
    cluener = write(tmp_path, "c.json", '{"text": "好", "label": {"x": {}}}\n')
    assert "the cluener format (detected from the content) cannot hold" in error_of(read_text,
                                                                                      cluener)
    with pytest.raises(ValueError, match="task must be classification or pair"):
        read_text(path, "ner")


# ---- TSV / CSV -------------------------------------------------------------------------
def test_tsv_classification_with_bom_crlf_and_label_rules(tmp_path):
    path = write(tmp_path, "train.tsv", (
        "\ufefflabel\ttext_a\r\n"      # 1 header
        " pos \t 很好 \r\n"             # 2 label and text stripped
        "-\t不知道\r\n"                 # 3 dropped: label_dash
        "\t没有标签\r\n"                # 4 dropped: label_empty
        "\r\n"                          # 5 blank
        "neg\t\r\n"                     # 6 empty text: kept
        "neg\t太差 了"))                # 7 no final line end
    messages = []
    examples, account = formats.read_text_examples(path, "classification", log_fn=messages.append)
    assert [(e.line, e.texts, e.label, e.condition) for e in examples] == [
        (2, ("很好",), "pos", None), (6, ("",), "neg", None), (7, ("太差 了",), "neg", None)]
    assert (account.read, account.used) == (5, 3)
    assert account.dropped == {"label_dash": 1, "label_empty": 1}
    assert account.notes == {"bom": 1, "header_lines": 1, "empty_text": 1}
    assert messages == [f"{path} (tsv): 5 read, 3 used, dropped: label_dash=1, label_empty=1; "
                        "notes: bom=1, empty_text=1, header_lines=1"]


def test_unlabelled_rows_are_kept_in_test_files(tmp_path):
    path = write(tmp_path, "test.tsv", "label\ttext_a\n-\t甲\n\t乙\npos\t丙\n")
    examples, account = read_text(path, require_labels=False)
    assert [(e.line, e.texts[0], e.label) for e in examples] == [
        (2, "甲", None), (3, "乙", None), (4, "丙", "pos")]
    assert account.dropped == {} and account.notes["unlabelled"] == 2
    no_label_column = write(tmp_path, "test2.tsv", "qid\ttext_a\n0\t甲\n1\t乙\n")
    examples, account = read_text(no_label_column, require_labels=False)
    assert [(e.texts, e.label) for e in examples] == [(("甲",), None), (("乙",), None)]
    assert account.notes == {"header_lines": 1, "ignored_columns": 1, "unlabelled": 2}


def test_tsv_pair_with_condition_and_chosen_fields(tmp_path):
    path = write(tmp_path, "pairs.tsv",
                 "id\tq1\tq2\ty\tcondition\n7\t你好\t您好\t1\t0.5,1\n8\t再见\t拜拜\t0\t 2 \n")
    examples, account = read_text(path, "pair", text_fields=["q1", "q2"], label_field="y")
    assert [(e.line, e.texts, e.label, e.condition) for e in examples] == [
        (2, ("你好", "您好"), "1", "0.5,1"), (3, ("再见", "拜拜"), "0", "2")]
    assert account.format == "tsv" and account.notes["ignored_columns"] == 1
    # the same fields as one comma-separated string (a flag value)
    again, _ = read_text(path, "pair", text_fields="q1, q2", label_field="y")
    assert again == examples


def test_header_missing_a_field_names_it_the_header_and_the_flags(tmp_path):
    path = write(tmp_path, "train.tsv", "sentiment\ttext\n1\t好\n")
    message = error_of(read_text, path)
    assert message.startswith(f"{path}:1: the header has no 'text_a' or 'label' column")
    assert "header fields: sentiment, text" in message
    assert "--text_fields" in message and "--label_field" in message


def test_a_one_text_file_read_as_pairs_names_the_task_that_fits(tmp_path):
    """ChnSentiCorp's label / text_a read with the default --task=pair: the fix is the task."""
    path = write(tmp_path, "train.tsv", "label\ttext_a\n1\t好\n")
    message = error_of(read_text, path, "pair")
    assert message.startswith(f"{path}:1: the header has no 'text_b' column")
    assert message.endswith("the file fits --task=classification (a classification task "
                            "reads text_a): pass it")


def test_row_with_the_wrong_number_of_fields(tmp_path):
    path = write(tmp_path, "train.tsv", "label\ttext_a\n1\t好\n0\t有\t一个 tab\n")
    message = error_of(read_text, path)
    assert message.startswith(f"{path}:3: expected 2 fields (as in the header), got 3")
    assert "a tab inside a text splits it" in message


def test_text_fields_must_match_the_task(tmp_path):
    path = write(tmp_path, "train.tsv", "label\ttext_a\n1\t好\n")
    message = error_of(read_text, path, text_fields=["a", "b"])
    assert message.startswith(f"{path}: --text_fields 'a,b' names 2 field(s)")
    assert "a classification task reads 1 text field(s)" in message
    assert "reads 2" in error_of(read_text, path, "pair", text_fields=["text_a"])


def test_not_utf8_line_is_reported_by_line(tmp_path):
    path = write(tmp_path, "train.tsv", "label\ttext_a\n1\t好\n".encode() + "0\t差\n".encode("gbk"))
    message = error_of(read_text, path)
    assert message.startswith(f"{path}:3: not UTF-8") and "convert the file to UTF-8" in message


@pytest.mark.parametrize("read, kwargs", [(read_text, {}), (read_tagged, {}),
                                          (read_text, {"task": "pair", "format": "lcqmc"})])
def test_missing_file_raises_the_os_error(tmp_path, read, kwargs):
    with pytest.raises(FileNotFoundError):
        read(str(tmp_path / "absent.txt"), **kwargs)


def test_file_without_examples_says_so_with_its_summary(tmp_path):
    header_only = write(tmp_path, "a.tsv", "label\ttext_a\n")
    assert error_of(read_text, header_only) == (
        f"{header_only}: no examples ({header_only} (tsv): 0 read, 0 used; notes: "
        "header_lines=1); the file holds no data rows")
    all_dashes = write(tmp_path, "b.tsv", "label\ttext_a\n-\t甲\n-\t乙\n")
    message = error_of(read_text, all_dashes)
    assert "dropped: label_dash=2" in message and "--label_field" in message
    assert issubclass(formats.DataFormatError, UserError)


def test_csv_quoted_fields_and_record_lines(tmp_path):
    path = write(tmp_path, "train.csv", (
        'text_a,label\r\n'
        '"好,很好",pos\r\n'
        '"第一行\n第二行",neg\r\n'
        '\r\n'
        '"引号""里面""",pos\r\n'))
    examples, account = read_text(path)
    assert [(e.line, e.texts[0], e.label) for e in examples] == [
        (2, "好,很好", "pos"), (3, "第一行\n第二行", "neg"), (6, '引号"里面"', "pos")]
    assert account.format == "csv" and (account.read, account.used) == (3, 3)
    bad = write(tmp_path, "bad.csv", "text_a,label\n好,pos\n不,好,neg\n")
    message = error_of(read_text, bad)
    assert message.startswith(f"{bad}:3: expected 2 fields (as in the header), got 3")
    assert "quote fields that hold commas" in message


# ---- JSONL (CLUE) ----------------------------------------------------------------------
def test_jsonl_classification_numbers_descriptions_and_other_fields(tmp_path):
    lines = [{"label": "102", "label_desc": "news_edu", "sentence": "考试", "keywords": "a"},
             {"label": 103, "label_des": "news_car", "sentence": " 汽车 "},
             {"label": "-", "sentence": "不知道"},
             {"sentence": "没有标签"}]
    path = write(tmp_path, "train.json",
                 "\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n\n")
    examples, account = read_text(path)
    assert [(e.line, e.texts, e.label) for e in examples] == [
        (1, ("考试",), "102"), (2, ("汽车",), "103")]
    assert account.dropped == {"label_dash": 1, "label_empty": 1}
    assert account.notes == {"label_desc_ignored": 2, "other_fields_ignored": 1}
    assert account.summary() == (f"{path} (jsonl): 4 read, 2 used, dropped: label_dash=1, "
                                 "label_empty=1; notes: label_desc_ignored=2, "
                                 "other_fields_ignored=1")


def test_jsonl_pair_test_file_without_labels(tmp_path):
    path = write(tmp_path, "test.json", '{"id": 0, "sentence1": "甲", "sentence2": "乙"}\n'
                                        '{"id": 1, "sentence1": "丙", "sentence2": null}\n')
    examples, account = read_text(path, "pair", require_labels=False)
    assert [(e.texts, e.label) for e in examples] == [(("甲", "乙"), None), (("丙", ""), None)]
    assert account.notes == {"unlabelled": 2, "empty_text": 1, "other_fields_ignored": 2}


def test_jsonl_chosen_fields_and_condition(tmp_path):
    path = write(tmp_path, "train.json", '{"q": "甲", "y": 1, "condition": "0,1"}\n')
    examples, _ = read_text(path, text_fields=["q"], label_field="y")
    assert examples == [formats.TextExample(1, ("甲",), "1", "0,1")]


def test_jsonl_errors_name_the_line_and_what_to_do(tmp_path):
    missing = write(tmp_path, "a.json",
                    '{"sentence": "好", "label": "1"}\n{"text": "x", "label": "0"}\n')
    message = error_of(read_text, missing)
    assert message.startswith(f"{missing}:2: no 'sentence' field (keys: text, label)")
    assert "--text_fields" in message
    broken = write(tmp_path, "b.json",
                   '{"sentence": "好", "label": "1"}\n{"sentence": "好" "label"}\n')
    message = error_of(read_text, broken)
    assert message.startswith(f"{broken}:2: invalid JSON (Expecting ',' delimiter at column 18)")
    listed = write(tmp_path, "c.json", '{"sentence": "好", "label": "1"}\n[1, 2]\n')
    assert error_of(read_text, listed, format="jsonl").startswith(
        f"{listed}:2: expected one JSON object per line, found list")
    bad_label = write(tmp_path, "d.json", '{"sentence": "好", "label": ["1"]}\n')
    assert error_of(read_text, bad_label).startswith(
        f"{bad_label}:1: field 'label' must be a string or a number, found [\"1\"]")


# ---- LCQMC -----------------------------------------------------------------------------
def test_lcqmc_keeps_its_reader_rules_and_counts(tmp_path):
    path = write(tmp_path, "train.txt", (
        "\ufefftext_a\ttext_b\tlabel\r\n"   # 1 header
        "我想买手机\t买手机\t1\r\n"           # 2
        "only one field\n"                  # 3 malformed
        "\n"                                # 4 blank
        "卡丢了\t怎么办\t0\t2\n").encode()   # 5 with a condition
        + b"\xff\tbad\t0\n")                # 6 malformed (not UTF-8): counted, not fatal
    messages = []
    # with its header line it reads as tsv unless told (LCQMC files have none)
    assert formats.detect_format(path, "pair") == "tsv"
    examples, account = formats.read_text_examples(path, "pair", format="lcqmc",
                                                   log_fn=messages.append,
                                                   max_malformed_share=0.5)  # 2 of 4 rows
    assert [(e.line, e.texts, e.label, e.condition) for e in examples] == [
        (2, ("我想买手机", "买手机"), "1", None), (5, ("卡丢了", "怎么办"), "0", "2")]
    assert (account.read, account.used, account.dropped) == (4, 2, {"malformed": 2})
    assert account.notes == {"bom": 1, "header_lines": 1, "blank_lines": 1}
    assert messages[0].startswith(f"{path}:3: malformed line skipped")
    assert messages[-1] == account.summary() and len(messages) == 3


def test_lcqmc_errors(tmp_path):
    path = write(tmp_path, "bad.txt", "a\tb\t7\n")
    message = error_of(read_text, path, "pair", format="lcqmc")
    assert message.startswith(f"{path}: no examples (lcqmc): no usable text_a<TAB>text_b")
    good = write(tmp_path, "good.txt", "a\tb\t1\n")
    assert "do not apply to the lcqmc format" in error_of(read_text, good, "pair",
                                                          label_field="y")


# ---- CoNLL -----------------------------------------------------------------------------
def test_conll_sentences_docstart_columns_and_whitespace_tokens(tmp_path):
    path = write(tmp_path, "train.txt", (
        "-DOCSTART- -X- -X- O\r\n"    # 1 dropped
        "\r\n"                        # 2
        "张 B-PER\r\n"                # 3
        "三\tI-PER\r\n"               # 4
        "  O\r\n"                     # 5 a space token
        "\r\n\r\n\r\n"                # 6-8 one separator
        "EU NNP B-NP B-ORG\r\n"       # 9 first and last field
        "好 O"))                      # 10 no final line end
    examples, account = read_tagged(path)
    assert [(e.line, e.chars, e.tags) for e in examples] == [
        (3, ["张", "三", " "], ["B-PER", "I-PER", "O"]), (9, ["EU", "好"], ["B-ORG", "O"])]
    assert examples[0].spans is None and examples[0].text is None
    assert (account.format, account.read, account.used) == ("conll", 3, 2)
    assert account.dropped == {"docstart": 1}
    assert account.notes == {"whitespace_tokens": 1, "multi_column_lines": 1}


def test_conll_untagged_test_file_and_mixing(tmp_path):
    path = write(tmp_path, "test.txt", "张\n三\n\n好\n")
    examples, account = read_tagged(path, format="conll", require_labels=False)
    assert [(e.line, e.chars, e.tags) for e in examples] == [(1, ["张", "三"], None),
                                                              (4, ["好"], None)]
    assert account.notes == {"unlabelled": 2}
    message = error_of(read_tagged, path, format="conll")
    assert message.startswith(f"{path}:1: '张' is not `token tag`")
    mixed = write(tmp_path, "mixed.txt", "张 B-PER\n三\n")
    message = error_of(read_tagged, mixed, require_labels=False)
    assert message.startswith(f"{mixed}:2: '三' has no tag, but earlier tokens have")
    reverse = write(tmp_path, "reverse.txt", "张\n三 O\n")
    assert error_of(read_tagged, reverse, format="conll", require_labels=False).startswith(
        f"{reverse}:2: '三 O' has a tag, but earlier tokens have none")


def test_conll_not_utf8_and_empty(tmp_path):
    path = write(tmp_path, "gbk.txt", "张 B-PER\n".encode() + "三 I-PER\n".encode("gbk"))
    assert error_of(read_tagged, path).startswith(f"{path}:2: not UTF-8")
    only_docstart = write(tmp_path, "doc.txt", "-DOCSTART- O\n\n")
    assert error_of(read_tagged, only_docstart, format="conll") == (
        f"{only_docstart}: no examples ({only_docstart} (conll): 1 read, 0 used, dropped: "
        "docstart=1); the file holds no data rows")


# ---- CLUENER ---------------------------------------------------------------------------
def cluener_line(text, label=None, **extra):
    record = {"text": text, **extra}
    if label is not None:
        record["label"] = label
    return json.dumps(record, ensure_ascii=False) + "\n"


def test_cluener_spans_are_end_exclusive_and_sorted(tmp_path):
    path = write(tmp_path, "train.json",
                 cluener_line("张三在北京见到张三", {"address": {"北京": [[3, 4]]},
                                                    "name": {"张三": [[7, 8], [0, 1]]}})
                 + "\n" + cluener_line("今天没有实体", {}, id=5))
    examples, account = read_tagged(path)
    first, second = examples
    assert first.line == 1 and first.text == "张三在北京见到张三"
    assert first.chars == list("张三在北京见到张三") and first.tags is None
    assert first.spans == [("name", 0, 2), ("address", 3, 5), ("name", 7, 9)]
    assert (second.line, second.spans) == (3, [])
    assert (account.format, account.read, account.used) == ("cluener", 2, 2)
    assert account.notes == {"other_fields_ignored": 1}


def test_cluener_test_file_without_labels(tmp_path):
    path = write(tmp_path, "test.json", cluener_line("张三", id=0) + cluener_line("李四", id=1))
    examples, account = read_tagged(path, require_labels=False)
    assert [(e.line, e.text, e.spans) for e in examples] == [(1, "张三", None), (2, "李四", None)]
    assert account.notes == {"unlabelled": 2, "other_fields_ignored": 2}
    message = error_of(read_tagged, path)
    assert message.startswith(f"{path}:1: no \"label\": the file has no labels")


@pytest.mark.parametrize("label, expected", [
    ({"name": {"张三": [[0, 0]]}}, "name '张三' at [0, 0] does not match the text there, '张'"),
    ({"name": {"张三": [[5, 6]]}}, "name '张三': [5, 6] is not a span inside the text (length 5)"),
    ({"name": {"张三": [[0, 1]]}, "title": {"三在": [[1, 2]]}},
     "spans overlap: name '张三' [0, 1] and title '三在' [1, 2]"),
    ({"name": ["张三"]}, "\"label\" is not a dict of dicts"),
])
def test_cluener_label_errors_name_the_mention(tmp_path, label, expected):
    path = write(tmp_path, "train.json", cluener_line("好", {}) + cluener_line("张三在北京", label))
    message = error_of(read_tagged, path, format="cluener")
    assert message.startswith(f"{path}:2: {expected}")
    assert "keep one of them" in message or "end inclusive" in message


def test_cluener_invalid_json_and_missing_text(tmp_path):
    path = write(tmp_path, "bad.json", '{"text": "好", "label": {}}\n{"text": \n')
    assert error_of(read_tagged, path).startswith(f"{path}:2: invalid JSON (Expecting value")
    no_text = write(tmp_path, "no_text.json", '{"sentence": "好"}\n')
    assert error_of(read_tagged, no_text, format="cluener").startswith(
        f"{no_text}:1: no \"text\" string (keys: sentence)")


def test_account_as_dict_is_json_ready(tmp_path):
    path = write(tmp_path, "a.tsv", "label\ttext_a\n-\t甲\n1\t乙\n")
    _, account = read_text(path)
    assert json.loads(json.dumps(account.as_dict())) == {
        "path": path, "format": "tsv", "read": 2, "used": 1,
        "dropped": {"label_dash": 1}, "notes": {"header_lines": 1}}


# ---- the sample datasets ---------------------------------------------------------------
def test_samples_are_what_the_generator_writes():
    spec = importlib.util.spec_from_file_location("make_samples", SAMPLES / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    files = module.generate(20241)
    assert len(files) == 17
    for relative, content in files.items():
        assert (SAMPLES / relative).read_bytes() == content.encode("utf-8"), relative


@pytest.mark.parametrize("dataset, task, format_name, require_labels, expected", [
    ("sentiment/train.tsv", "classification", "tsv", True, (60, 60, {"neg": 30, "pos": 30})),
    ("sentiment/dev.tsv", "classification", "tsv", True, (20, 20, {"neg": 10, "pos": 10})),
    ("sentiment/test.tsv", "classification", "tsv", False, (20, 20, {"neg": 10, "pos": 10})),
    ("pairs_clue/train.json", "pair", "jsonl", True, (60, 60, {"0": 30, "1": 30})),
    ("pairs_clue/dev.json", "pair", "jsonl", True, (20, 20, {"0": 10, "1": 10})),
    ("pairs_clue/test.json", "pair", "jsonl", False, (20, 20, {None: 20})),
    ("nli_clue/train.json", "pair", "jsonl", True,
     (60, 58, {"contradiction": 14, "entailment": 23, "neutral": 21})),
    ("nli_clue/dev.json", "pair", "jsonl", True,
     (20, 18, {"contradiction": 7, "entailment": 6, "neutral": 5})),
])
def test_sample_text_datasets(dataset, task, format_name, require_labels, expected):
    examples, account = read_text(SAMPLES / dataset, task, require_labels=require_labels)
    assert (account.read, account.used, Counter(e.label for e in examples)) == expected
    assert account.format == format_name
    assert {len(e.texts) for e in examples} == {1 if task == "classification" else 2}
    assert all(all(e.texts) for e in examples)
    if dataset.startswith("nli_clue"):
        assert account.dropped == {"label_dash": 2}
    if dataset == "sentiment/train.tsv":  # learnable from obvious words
        assert all(("好" in e.texts[0]) == (e.label == "pos") for e in examples)


@pytest.mark.parametrize("split, sentences", [("train", 60), ("dev", 20), ("test", 20)])
def test_sample_ner_datasets(split, sentences):
    bio, bio_account = read_tagged(SAMPLES / "ner_bio" / f"{split}.txt")
    bmes, bmes_account = read_tagged(SAMPLES / "ner_bmes" / f"{split}.txt")
    assert bio_account.used == bmes_account.used == sentences
    assert [e.chars for e in bio] == [e.chars for e in bmes]
    assert {tag for e in bio for tag in e.tags} <= {"O", "B-PER", "I-PER", "B-LOC", "I-LOC",
                                                     "B-ORG", "I-ORG"}
    for bio_example, bmes_example in zip(bio, bmes):
        for bio_tag, bmes_tag in zip(bio_example.tags, bmes_example.tags):
            assert bio_tag[2:] == bmes_tag[2:]
            assert (bio_tag[0] == "B") == (bmes_tag[0] in "BS")
    cluener, account = read_tagged(SAMPLES / "cluener" / f"{split}.json",
                                   require_labels=split != "test")
    assert account.format == "cluener" and account.used == sentences
    if split == "test":
        assert all(e.spans is None for e in cluener)
    else:
        assert all(e.spans and all(e.text[start:end] for _, start, end in e.spans)
                   for e in cluener)


def test_sample_ner_train_counts():
    bmes, _ = read_tagged(SAMPLES / "ner_bmes" / "train.txt")
    assert Counter(tag[0] for e in bmes for tag in e.tags) == {
        "B": 121, "M": 107, "E": 121, "S": 9, "O": 465}
    cluener, _ = read_tagged(SAMPLES / "cluener" / "train.json")
    assert sum(len(e.spans) for e in cluener) == 172


# ---- the shared data sets (skipped when ../shared is absent) ----------------------------
def test_shared_chnsenticorp_train():
    examples, account = read_text(shared_path("chnsenticorp", "train.tsv"))
    assert account.format == "tsv" and (account.read, account.used) == (9600, 9600)
    assert account.notes["header_lines"] == 1 and account.dropped == {}
    assert sum(e.label == "1" for e in examples) == 4799
    assert sum(e.label == "0" for e in examples) == 4801


def test_shared_lcqmc_dev():
    examples, account = read_text(shared_path("lcqmc", "dev.txt"), "pair")
    assert account.format == "lcqmc" and (account.read, account.used) == (8802, 8802)
    assert examples[0].line == 1 and examples[-1].line == 8802


def test_shared_msra_ner_train():
    examples, account = read_tagged(shared_path("msra_ner", "train.txt"))
    assert account.format == "conll" and (account.read, account.used) == (50289, 50289)
    assert account.dropped == {} and account.notes == {}
    assert sum(len(e.chars) for e in examples) == 2153462
    assert {tag for e in examples for tag in e.tags} == {
        "O", *(f"{p}-{t}" for p in "BMES" for t in ("PER", "LOC", "ORG"))}
