"""The LCQMC file format, parsed once: `text_a<TAB>text_b<TAB>label` lines.

Used by data_gen.tools.lcqmc_to_docs (pairs -> a pretraining corpus) and by
finetune.formats (format `lcqmc`, pairs -> the pair task); finetune imports it
from data_gen, the stage that owns text processing.

Rules: UTF-8, a BOM on line 1 is dropped, "\\r\\n" line ends are accepted.
Line 1 is a header, and skipped, when it has three fields and its third is
not a number (`text_a<TAB>text_b<TAB>label`). Blank lines are counted. Any
other line that is not two non-empty texts and a label 0 or 1 is malformed:
it is logged as `PATH:LINE: malformed line skipped: REASON` (the first
MAX_LOGGED ones, then a count), listed in the report and skipped.

Conditions (fine-tuning a conditional-LayerNorm model, read with
`condition_column=True`): a 4th field, `text_a<TAB>text_b<TAB>label<TAB>COND`,
kept as text in `Pair.condition` (a 4-field header is skipped too).
`parse_condition` turns it into C floats: one integer class id in [0, C)
(a one-hot vector) or C comma-separated numbers. Which lines need one is the
caller's rule (finetune.tasks.classification.parse_conditions); lcqmc_to_docs reads the texts and
ignores the condition.
"""
import dataclasses
import math
import os
import re

LABELS = ("0", "1")
MAX_LOGGED = 20
MAX_MALFORMED_SHARE = 0.01  # of the data lines, beyond which a reader stops (--max_malformed_share)
_BOM = "\ufeff"


class LcqmcError(ValueError):
    """An LCQMC file is missing or holds no usable pair."""


@dataclasses.dataclass(frozen=True)
class Pair:
    line_number: int
    text_a: str
    text_b: str
    label: int         # 0 or 1 (1 = paraphrase)
    condition: str = None  # the 4th field as text (condition_column=True), else None


@dataclasses.dataclass
class ReadReport:
    path: str
    lines: int = 0
    pairs: int = 0
    header_skipped: bool = False
    blank_lines: int = 0
    malformed: list = dataclasses.field(default_factory=list)  # [(line_number, reason)]

    def summary(self):
        text = (f"{self.path}: {self.lines} lines, {self.pairs} pairs read, "
                f"{len(self.malformed)} malformed line(s) skipped, {self.blank_lines} blank")
        return text + (", header line skipped" if self.header_skipped else "")


def parse_line(raw, line_number, condition_column=False):
    """Classifies one raw line (bytes, line end included).

    Returns (kind, value): ("pair", Pair), ("header", None), ("blank", None)
    or ("malformed", reason). condition_column: also accept a 4th field, kept
    unparsed in Pair.condition (see parse_condition).
    """
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return "malformed", f"not UTF-8 ({error.reason} at byte {error.start} of the line)"
    if line_number == 1 and line.startswith(_BOM):
        line = line[1:]
    line = line.rstrip("\r\n")
    if not line.strip():
        return "blank", None
    fields = [field.strip() for field in line.split("\t")]
    if len(fields) != 3 and not (condition_column and len(fields) == 4):
        if condition_column:
            return "malformed", (f"expected 3 or 4 tab-separated fields (text_a, text_b, "
                                 f"label[, condition]), found {len(fields)}")
        return "malformed", (f"expected 3 tab-separated fields (text_a, text_b, label), "
                             f"found {len(fields)}")
    text_a, text_b, label = fields[:3]
    condition = fields[3] if len(fields) == 4 else None
    if label not in LABELS:
        if line_number == 1 and not label.lstrip("-").isdigit():
            return "header", None
        return "malformed", f"label must be 0 or 1, found {label!r}"
    if not text_a or not text_b:
        return "malformed", "empty text_a or text_b"
    return "pair", Pair(line_number, text_a, text_b, int(label), condition)


_CLASS_ID = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def parse_condition(text, size):
    """A condition field -> tuple of `size` floats.

    One integer in [0, size) is a class id and gives its one-hot vector; else
    the field must be `size` comma-separated finite numbers (spaces allowed).
    Raises ValueError(reason), the reason saying what was expected.
    """
    if size == 1:
        expected = "the class id 0 or one number with a decimal point (e.g. 0.5 or 1.0)"
    else:
        expected = f"a class id in [0, {size}) or {size} comma-separated numbers"
    text = text.strip()
    if not text:
        raise ValueError(f"empty condition; expected {expected}")
    if _CLASS_ID.fullmatch(text):
        class_id = int(text)
        if not 0 <= class_id < size:
            raise ValueError(f"class id {class_id} is out of range; expected {expected}")
        return tuple(float(index == class_id) for index in range(size))
    parts = [part.strip() for part in text.split(",")]
    if len(parts) != size:
        raise ValueError(f"{text!r} holds {len(parts)} comma-separated value(s); "
                         f"expected {expected}")
    for part in parts:
        if not _NUMBER.fullmatch(part):
            raise ValueError(f"{part!r} in {text!r} is not a number; expected {expected}")
    values = tuple(float(part) for part in parts)
    if not all(math.isfinite(value) for value in values):
        raise ValueError(f"{text!r} overflows float; expected {expected}")
    return values


def check_malformed_share(report, max_share, flag="--max_malformed_share"):
    """LcqmcError when more than `max_share` of a file's data lines (pairs + malformed)
    were malformed, naming the share, the first one and the flag; else nothing."""
    total = report.pairs + len(report.malformed)
    if not report.malformed or len(report.malformed) / total <= max_share:
        return
    line, reason = report.malformed[0]
    raise LcqmcError(
        f"{report.path}: {len(report.malformed)} of {total} lines "
        f"({len(report.malformed) / total:.1%}) are malformed, more than {flag}={max_share}; "
        f"the first is line {line}: {reason}. Fix the file (or raise {flag} to drop them)")


def read_pairs(path, log_fn=print, condition_column=False):
    """Reads one LCQMC file. Returns ([Pair], ReadReport); see the module doc.

    condition_column: accept a 4th field (Pair.condition), see parse_line.
    Raises LcqmcError when the file is missing or has no usable pair.
    """
    path = str(path)
    if not os.path.isfile(path):
        raise LcqmcError(f"{path}: no such file (expected text_a<TAB>text_b<TAB>label lines)")
    report = ReadReport(path=path)
    pairs = []
    with open(path, "rb") as reader:
        for line_number, raw in enumerate(reader, start=1):
            report.lines = line_number
            kind, value = parse_line(raw, line_number, condition_column)
            if kind == "pair":
                pairs.append(value)
            elif kind == "header":
                report.header_skipped = True
            elif kind == "blank":
                report.blank_lines += 1
            else:
                report.malformed.append((line_number, value))
                if len(report.malformed) <= MAX_LOGGED:
                    log_fn(f"{path}:{line_number}: malformed line skipped: {value}")
    report.pairs = len(pairs)
    if len(report.malformed) > MAX_LOGGED:
        log_fn(f"{path}: ... and {len(report.malformed) - MAX_LOGGED} more malformed lines")
    if not pairs:
        raise LcqmcError(f"{path}: no usable text_a<TAB>text_b<TAB>label line "
                         f"({len(report.malformed)} malformed, {report.blank_lines} blank)")
    return pairs, report
