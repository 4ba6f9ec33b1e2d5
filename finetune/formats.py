"""Reading the input files of fine-tuning tasks: one account per file, errors by PATH:LINE.

classification (one text) and pair (two texts) -> `read_text_examples`: `tsv`
/ `csv` (a header line naming the columns: default `label`, `text_a`[,
`text_b`], an optional `condition`), `jsonl` (CLUE: default `sentence` or
`sentence1`/`sentence2`, and `label`), `lcqmc` (pair only, no header, read by
data_gen.tools.lcqmc_format with its own rules). ner -> `read_tagged_examples`:
`conll` (`token tag` lines, blank lines between sentences) and `cluener`
(`{"text", "label": {type: {mention: [[start, end]]}}}`, end inclusive; the
spans come back end-exclusive).

UTF-8 (a BOM is noted), CRLF accepted. `detect_format` looks at the content,
never the name; an explicit format skips it. Input problems raise
DataFormatError (a UserError) starting `PATH:LINE` (or `PATH`) and saying
what to do; a missing file raises its OSError. Every dropped row is counted by
reason in the file's ReadAccount, other observations in its notes, and
`log_fn(account.summary())` runs once per file. Labels are stripped strings:
with require_labels (train/dev) a `-` label (OCNLI) is dropped as
`label_dash`, an empty or missing one as `label_empty`; test files
(require_labels=False) keep such rows with label None, so predictions can be
written for every row in input order.
"""
import csv
import dataclasses
import itertools
import json
import re

from common.cli_options import UserError
from data_gen.tools import lcqmc_format
from data_gen.text import unreadable_input

FORMATS = ("tsv", "csv", "jsonl", "lcqmc", "conll", "cluener")
# The names a task folder's split files may end in (train.tsv, dev.jsonl, ...): --data_dir.
DATA_EXTENSIONS = (".txt", ".tsv", ".csv", ".json", ".jsonl")
TEXT_FORMATS = ("tsv", "csv", "jsonl", "lcqmc")
TAG_FORMATS = ("conll", "cluener")
TASKS = ("classification", "pair", "ner")
_TASK_FORMATS = {"classification": ("tsv", "csv", "jsonl"), "pair": TEXT_FORMATS,
                 "ner": TAG_FORMATS}
_TABLE_TEXTS = {"classification": ("text_a",), "pair": ("text_a", "text_b")}
_JSON_TEXTS = {"classification": ("sentence",), "pair": ("sentence1", "sentence2")}
_LABEL = "label"
_CONDITION = "condition"
_LABEL_DESCRIPTIONS = ("label_desc", "label_des")
_TAG = re.compile(r"O|[A-Za-z]{1,2}[-_][A-Za-z]\w*")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_BOM = "\ufeff"
_FORMAT_LIST = ("tsv / csv (a header line naming the columns), jsonl (CLUE JSON lines), "
                "lcqmc (text_a<TAB>text_b<TAB>label, pair only), conll (`char tag` lines, ner), "
                "cluener (JSON lines with text and label spans, ner)")


class DataFormatError(UserError):
    """An input file of a fine-tuning task cannot be read; the message starts with PATH[:LINE]."""


@dataclasses.dataclass
class TextExample:
    line: int                # 1-based line in the file (CSV: the record's first line)
    texts: tuple             # one text (classification) or two (pair)
    label: str = None        # stripped; None when unlabelled (require_labels=False only)
    condition: str = None    # the 4th LCQMC field / a `condition` column as text, else None


@dataclasses.dataclass
class TaggedExample:
    line: int                # line of the first character (CoNLL) or of the JSON line (CLUENER)
    chars: list              # CoNLL tokens, or list(text) for CLUENER
    tags: list = None        # CoNLL tags as written; None for CLUENER or unlabelled
    spans: list = None       # CLUENER [(type, start, end_exclusive)] sorted; None when unlabelled
    text: str = None         # CLUENER: the original text


@dataclasses.dataclass
class ReadAccount:
    """What reading one file did: rows seen, examples kept, drops by reason, other counts."""
    path: str
    format: str
    read: int = 0
    used: int = 0
    dropped: dict = dataclasses.field(default_factory=dict)
    notes: dict = dataclasses.field(default_factory=dict)

    def drop(self, reason, count=1):
        """Counts `count` rows dropped for `reason`."""
        self.dropped[reason] = self.dropped.get(reason, 0) + count

    def note(self, key, count=1):
        """Counts an observation that dropped nothing."""
        self.notes[key] = self.notes.get(key, 0) + count

    def as_dict(self):
        """A JSON-ready copy (for results.json)."""
        return {"path": self.path, "format": self.format, "read": self.read, "used": self.used,
                "dropped": dict(sorted(self.dropped.items())),
                "notes": dict(sorted(self.notes.items()))}

    def summary(self):
        """One line: `PATH (tsv): 9600 read, 9598 used, dropped: label_empty=2; notes: ...`."""
        return f"{self.path} ({self.format}): {self.read} read, {self.used} used" + "".join(
            prefix + ", ".join(f"{key}={value}" for key, value in sorted(counts.items()))
            for prefix, counts in ((", dropped: ", self.dropped), ("; notes: ", self.notes))
            if counts)


def _lines(path, account=None, keep_ends=False):
    """(line_number, text) of each line of a UTF-8 file, without the BOM and (unless
    keep_ends) the line end."""
    with open(path, "rb") as reader:
        for number, raw in enumerate(reader, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise DataFormatError(f"{path}:{number}: not UTF-8 ({error.reason} at byte "
                                      f"{error.start} of the line); "
                                      f"{unreadable_input.advice(path)}") from None
            if number == 1 and text.startswith(_BOM):
                text = text[1:]
                if account is not None:
                    account.note("bom")
            yield number, text if keep_ends else text.rstrip("\r\n")


def detect_format(path, task, text_fields=None, label_field=None):
    """The format of `path` for `task` ("classification" | "pair" | "ner"), from its content.

    text_fields / label_field: column names the caller will ask for; a first
    line holding one of them is a header (so the file is tsv, not lcqmc).
    Raises DataFormatError when no format fits (`--input_format` overrides).
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}, got {task!r}")
    path, lines = str(path), []
    for number, text in _lines(path):
        if text.strip():
            lines.append((number, text))
            if len(lines) == (5 if task == "ner" else 1):  # later lines are the reader's
                break
    if not lines:
        raise DataFormatError(f"{path}: the file holds no non-blank line; give a file with data")
    number, text = lines[0]
    if text.lstrip().startswith("{"):
        return _detect_json(text, task)
    if task == "ner":
        if any(_TAG.fullmatch(fields[-1]) and len(fields) > 1 and fields[0] != "-DOCSTART-"
               for fields in (line.split() for _, line in lines)):
            return "conll"
    elif "\t" in text:
        names = {_LABEL, "text_a", "text_b", _CONDITION, label_field, *(text_fields or ())}
        fields = [field.strip() for field in text.split("\t")]
        if (task == "pair" and len(fields) in (3, 4) and not names & set(fields)
                and _INTEGER.fullmatch(fields[2])):
            return "lcqmc"
        return "tsv"
    elif "," in text:
        return "csv"
    raise DataFormatError(
        f"{path}:{number}: cannot tell the format of this {task} file from {text[:60]!r}; "
        f"the formats are {_FORMAT_LIST}; choose one with --input_format")


def _detect_json(text, task):
    """cluener for "text" with a dict-of-dicts "label"; without a label the task decides."""
    try:
        record = json.loads(text)
    except ValueError:
        record = None  # the reader reports the line
    if isinstance(record, dict) and "text" in record:
        label = record.get(_LABEL)
        if label is None:
            return "cluener" if task == "ner" else "jsonl"
        if isinstance(label, dict) and all(isinstance(value, dict) for value in label.values()):
            return "cluener"
    return "cluener" if task == "ner" and record is None else "jsonl"


def _resolve_format(path, task, format, text_fields=None, label_field=None):
    detected = format is None
    if detected:
        format = detect_format(path, task, text_fields, label_field)
    if format not in FORMATS:
        raise DataFormatError(f"{path}: unknown input format {format!r}; the formats are "
                              f"{', '.join(FORMATS)} (--input_format)")
    allowed = _TASK_FORMATS[task]
    if format not in allowed:
        how = " (detected from the content)" if detected else ""
        raise DataFormatError(f"{path}: the {format} format{how} cannot hold {task} data; a {task} "
                              f"file is {' or '.join(allowed)}: choose one with --input_format")
    return format


def _finish(examples, account, log_fn):
    account.used = len(examples)
    if not examples:
        hint = "the file holds no data rows"
        if account.dropped.get("label_empty") or account.dropped.get("label_dash"):
            hint = ("no row has a usable label: name the label column with --label_field, "
                    "or read the file as unlabelled test data")
        raise DataFormatError(f"{account.path}: no examples ({account.summary()}); {hint}")
    log_fn(account.summary())
    return examples, account


def read_text_examples(path, task, format=None, text_fields=None, label_field=None,
                       require_labels=True, log_fn=print, max_malformed_share=None):
    """Reads a classification or pair file. Returns ([TextExample], ReadAccount).

    format: one of TEXT_FORMATS, None = detect_format. text_fields: the column
    / field names of the texts (1 for classification, 2 for pair; a list or a
    comma-separated string), label_field: the label's; None = the format's
    defaults. require_labels=False (test files) keeps rows without a label.
    """
    if task not in ("classification", "pair"):
        raise ValueError(f"task must be classification or pair, got {task!r}")
    path = str(path)
    open(path, "rb").close()  # a missing file raises its OSError, not a format error
    fields = _field_names(path, task, text_fields)
    format = _resolve_format(path, task, format, fields, label_field)
    account = ReadAccount(path=path, format=format)
    if format == "lcqmc":
        if fields not in (None, ("text_a", "text_b")) or label_field not in (None, _LABEL):
            raise DataFormatError(
                f"{path}: --text_fields / --label_field do not apply to the lcqmc format (fixed "
                "columns text_a<TAB>text_b<TAB>label[<TAB>condition]); drop them, or give the "
                "file a header line and read it with --input_format tsv")
        if max_malformed_share is None:
            max_malformed_share = lcqmc_format.MAX_MALFORMED_SHARE
        return _finish(_read_lcqmc(path, account, log_fn, max_malformed_share), account, log_fn)
    if format == "jsonl":
        fields, reader = fields or _JSON_TEXTS[task], _read_jsonl
    else:
        fields, reader = fields or _TABLE_TEXTS[task], _read_table
    examples = reader(path, fields, label_field or _LABEL, require_labels, account)
    return _finish(examples, account, log_fn)


def _field_names(path, task, text_fields):
    if text_fields is None:
        return None
    names = tuple(name.strip() for name in (text_fields.split(",") if isinstance(text_fields, str)
                                            else text_fields))
    wanted = len(_TABLE_TEXTS[task])
    if len(names) != wanted or not all(names):
        raise DataFormatError(f"{path}: --text_fields {','.join(names)!r} names {len(names)} "
                              f"field(s); a {task} task reads {wanted} text field(s)")
    return names


def _add_text_example(examples, line, texts, label, condition, require_labels, account):
    """Appends a TextExample, or counts the row as dropped for its label."""
    account.read += 1
    label = None if label is None else label.strip()
    if not label or label == "-":
        if require_labels:
            account.drop("label_dash" if label == "-" else "label_empty")
            return
        account.note("unlabelled")
        label = None
    texts = tuple(text.strip() for text in texts)
    if not all(texts):
        account.note("empty_text")
    examples.append(TextExample(line, texts, label, condition))


def _read_table(path, text_fields, label_field, require_labels, account):
    """tsv / csv: the first non-blank line is the header."""
    rows = _tsv_rows(path, account) if account.format == "tsv" else _csv_rows(path, account)
    examples, header = [], None
    for line, fields in rows:
        if header is None:
            header = [field.strip() for field in fields]
            account.note("header_lines")
            missing = [name for name in text_fields if name not in header]
            missing += [label_field] if require_labels and label_field not in header else []
            if missing:
                other_task = _task_the_header_fits(header, text_fields, label_field)
                raise DataFormatError(
                    f"{path}:{line}: the header has no {' or '.join(map(repr, missing))} column "
                    f"(header fields: {', '.join(header)}); " + (
                        f"the file fits --task={other_task} (a {other_task} task reads "
                        f"{', '.join(_TABLE_TEXTS[other_task])}): pass it" if other_task else
                        "the first line must name the columns: rename them, or choose the "
                        "columns with --text_fields / --label_field"))
            columns = [header.index(name) if name in header else None
                       for name in (*text_fields, label_field, _CONDITION)]
            if len(header) > len(set(columns) - {None}):
                account.note("ignored_columns", len(header) - len(set(columns) - {None}))
            continue
        if len(fields) != len(header):
            raise DataFormatError(
                f"{path}:{line}: expected {len(header)} fields (as in the header), got "
                f"{len(fields)}; fix the line (" + ("a tab inside a text splits it)"
                                                   if account.format == "tsv" else
                                                   "quote fields that hold commas)"))
        values = [None if column is None else fields[column] for column in columns]
        condition = values[-1] and values[-1].strip()
        _add_text_example(examples, line, values[:-2], values[-2], condition, require_labels,
                          account)
    return examples


def _task_the_header_fits(header, text_fields, label_field):
    """The other text task whose default columns a header has, when the one asked for's are
    missing (e.g. a one-text sentiment file read as the default pair task), else None."""
    for task, texts in _TABLE_TEXTS.items():
        if tuple(texts) != tuple(text_fields) and all(name in header for name in texts) \
                and label_field in header:
            return task
    return None


def _tsv_rows(path, account):
    for line, text in _lines(path, account):
        if text.strip() or "\t" in text:
            yield line, text.split("\t")


def _csv_rows(path, account):
    reader, start = csv.reader(text for _, text in _lines(path, account, keep_ends=True)), 1
    try:
        for row in reader:
            first, start = start, reader.line_num + 1
            if len(row) > 1 or (row and row[0].strip()):
                yield first, row
    except csv.Error as error:
        raise DataFormatError(f"{path}:{reader.line_num}: bad CSV ({error}); fix the quoting or "
                              "the line") from None


def _json_records(path, account):
    """(line, object) of every non-blank line; invalid JSON or a non-object stops at PATH:LINE."""
    for line, text in _lines(path, account):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            raise DataFormatError(f"{path}:{line}: invalid JSON ({error.msg} at column "
                                  f"{error.colno}); each line must be one JSON object") from None
        if not isinstance(record, dict):
            raise DataFormatError(f"{path}:{line}: expected one JSON object per line, found "
                                  f"{type(record).__name__}; fix the line")
        yield line, record


def _read_jsonl(path, text_fields, label_field, require_labels, account):
    """CLUE JSON lines: one object per non-blank line."""
    examples, known = [], {*text_fields, label_field, _CONDITION, *_LABEL_DESCRIPTIONS}
    for line, record in _json_records(path, account):
        missing = [name for name in text_fields if name not in record]
        if missing:
            raise DataFormatError(f"{path}:{line}: no {missing[0]!r} field (keys: "
                                  f"{', '.join(record)}); choose the text fields with "
                                  "--text_fields")
        if any(name in record for name in _LABEL_DESCRIPTIONS):
            account.note("label_desc_ignored")
        if set(record) - known:
            account.note("other_fields_ignored")
        values = [_json_scalar(path, line, name, record.get(name))
                  for name in (*text_fields, label_field, _CONDITION)]
        _add_text_example(examples, line, [text or "" for text in values[:-2]], values[-2],
                          values[-1], require_labels, account)
    return examples


def _json_scalar(path, line, name, value):
    """A JSON string or number as str (102 -> "102"); null or absent -> None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise DataFormatError(f"{path}:{line}: field {name!r} must be a string or a number, found "
                          f"{json.dumps(value, ensure_ascii=False)[:60]}; fix the line")


def _read_lcqmc(path, account, log_fn, max_malformed_share):
    with open(path, "rb") as reader:
        if reader.read(3) == _BOM.encode("utf-8"):
            account.note("bom")
    try:
        pairs, report = lcqmc_format.read_pairs(path, log_fn=log_fn, condition_column=True)
    except lcqmc_format.LcqmcError as error:
        reason = str(error).removeprefix(f"{path}: ")
        raise DataFormatError(f"{path}: no examples (lcqmc): {reason}; fix the lines logged "
                              "above, or choose another format with --input_format") from None
    account.read = len(pairs) + len(report.malformed)
    if report.malformed:
        account.drop("malformed", len(report.malformed))
    try:
        lcqmc_format.check_malformed_share(report, max_malformed_share)
    except lcqmc_format.LcqmcError as error:
        raise DataFormatError(str(error)) from None
    for key, count in (("header_lines", int(report.header_skipped)),
                       ("blank_lines", report.blank_lines)):
        if count:
            account.note(key, count)
    return [TextExample(pair.line_number, (pair.text_a, pair.text_b), str(pair.label),
                        pair.condition) for pair in pairs]


def read_tagged_examples(path, format=None, require_labels=True, log_fn=print):
    """Reads an NER file. Returns ([TaggedExample], ReadAccount).

    format: "conll" or "cluener", None = detect_format. require_labels=False
    (test files) accepts a CoNLL file without tags or CLUENER lines without
    "label" (tags / spans None).
    """
    path = str(path)
    open(path, "rb").close()  # a missing file raises its OSError, not a format error
    format = _resolve_format(path, "ner", format)
    account = ReadAccount(path=path, format=format)
    reader = _read_conll if format == "conll" else _read_cluener
    return _finish(reader(path, require_labels, account), account, log_fn)


def _read_conll(path, require_labels, account):
    """`token tag` lines; blank lines (any number) end a sentence; -DOCSTART- lines are dropped."""
    sentences, chars, tags = [], [], []
    tagged = None  # whether the file's tokens carry tags: its first token line decides
    for line, text in itertools.chain(_lines(path, account), [(None, "")]):  # "" ends the last
        fields = text.split()
        if not fields or fields[0] == "-DOCSTART-":
            if chars:
                account.read += 1
                sentences.append(TaggedExample(first, chars, tags if tagged else None))
                chars, tags = [], []
            if fields:
                account.read += 1
                account.drop("docstart")
            continue
        if len(fields) == 2 and tagged and chars:  # the common case, fast
            chars.append(fields[0])
            tags.append(fields[1])
            continue
        if len(fields) > 2:
            account.note("multi_column_lines")
        token, tag = fields[0], fields[-1] if len(fields) > 1 else None
        if tag is None and text[0].isspace() and tagged is not False and _TAG.fullmatch(token):
            account.note("whitespace_tokens")
            token, tag = " ", token
        if tagged is None and tag is None and require_labels:
            raise DataFormatError(
                f"{path}:{line}: {text!r} is not `token tag`: expected a token and its tag "
                "separated by whitespace; fix the line (only a test file may lack tags)")
        if tagged is not None and tagged != (tag is not None):
            what = "has no tag, but earlier tokens have" if tagged else "has a tag, but earlier " \
                "tokens have none"
            raise DataFormatError(f"{path}:{line}: {text!r} {what}; tag every token or none")
        tagged = tag is not None
        if not chars:
            first = line
        chars.append(token)
        tags.append(tag)
    if sentences and not tagged:
        account.note("unlabelled", len(sentences))
    return sentences


def _read_cluener(path, require_labels, account):
    """CLUENER JSON lines: {"text": str, "label": {type: {mention: [[start, end], ...]}}}."""
    examples = []
    for line, record in _json_records(path, account):
        text = record.get("text")
        if not isinstance(text, str):
            raise DataFormatError(f"{path}:{line}: no \"text\" string (keys: {', '.join(record)}); "
                                  "a CLUENER line is {\"text\": ..., \"label\": {...}}")
        account.read += 1
        spans = None
        if record.get(_LABEL) is not None:
            spans = _cluener_spans(f"{path}:{line}:", text, record[_LABEL])
        elif require_labels:
            raise DataFormatError(
                f"{path}:{line}: no \"label\": the file has no labels, which a training or dev "
                "file needs; give a labelled file (only a test file may lack labels)")
        else:
            account.note("unlabelled")
        if set(record) - {"text", _LABEL}:
            account.note("other_fields_ignored")
        if not text:
            account.note("empty_text")
        examples.append(TaggedExample(line, list(text), None, spans, text))
    return examples


def _cluener_spans(where, text, label):
    """label -> [(type, start, end_exclusive)] sorted; checks mentions, bounds and overlaps."""
    fix = "fix the label: {type: {mention: [[start, end], ...]}}, end inclusive"
    if not isinstance(label, dict) or not all(isinstance(m, dict) for m in label.values()):
        raise DataFormatError(f"{where} \"label\" is not a dict of dicts "
                              f"({json.dumps(label, ensure_ascii=False)[:60]}); {fix}")
    spans = set()
    for entity_type, mentions in label.items():
        for mention, positions in mentions.items():
            for position in positions if isinstance(positions, list) else [positions]:
                if not (isinstance(position, list) and len(position) == 2 and all(
                        type(value) is int for value in position)
                        and 0 <= position[0] <= position[1] < len(text)):
                    raise DataFormatError(f"{where} {entity_type} {mention!r}: {position!r} is not "
                                          f"a span inside the text (length {len(text)}); {fix}")
                start, end = position
                if text[start:end + 1] != mention:
                    raise DataFormatError(
                        f"{where} {entity_type} {mention!r} at [{start}, {end}] does not match the "
                        f"text there, {text[start:end + 1]!r}; {fix}")
                spans.add((entity_type, start, end + 1))
    spans = sorted(spans, key=lambda span: (span[1], span[2], span[0]))
    for (type_a, start_a, end_a), (type_b, start_b, end_b) in zip(spans, spans[1:]):
        if start_b < end_a:
            raise DataFormatError(
                f"{where} spans overlap: {type_a} {text[start_a:end_a]!r} [{start_a}, {end_a - 1}] "
                f"and {type_b} {text[start_b:end_b]!r} [{start_b}, {end_b - 1}]; keep one of them")
    return spans
