"""The LCQMC file format, parsed once: `text_a<TAB>text_b<TAB>label` lines.

Used by data_gen.lcqmc_to_docs (pairs -> a pretraining corpus) and by
finetune.lcqmc_data (pairs -> classifier features); finetune imports it
from data_gen, the stage that owns text processing.

Rules: UTF-8, a BOM on line 1 is dropped, "\\r\\n" line ends are accepted.
Line 1 is a header, and skipped, when it has three fields and its third is
not a number (`text_a<TAB>text_b<TAB>label`). Blank lines are counted. Any
other line that is not two non-empty texts and a label 0 or 1 is malformed:
it is logged as `PATH:LINE: malformed line skipped: REASON` (the first
MAX_LOGGED ones, then a count), listed in the report and skipped.
"""
import dataclasses
import os

LABELS = ("0", "1")
MAX_LOGGED = 20
_BOM = "\ufeff"


class LcqmcError(ValueError):
    """An LCQMC file is missing or holds no usable pair."""


@dataclasses.dataclass(frozen=True)
class Pair:
    line_number: int
    text_a: str
    text_b: str
    label: int         # 0 or 1 (1 = paraphrase)


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


def parse_line(raw, line_number):
    """Classifies one raw line (bytes, line end included).

    Returns (kind, value): ("pair", Pair), ("header", None), ("blank", None)
    or ("malformed", reason).
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
    if len(fields) != 3:
        return "malformed", (f"expected 3 tab-separated fields (text_a, text_b, label), "
                             f"found {len(fields)}")
    text_a, text_b, label = fields
    if label not in LABELS:
        if line_number == 1 and not label.lstrip("-").isdigit():
            return "header", None
        return "malformed", f"label must be 0 or 1, found {label!r}"
    if not text_a or not text_b:
        return "malformed", "empty text_a or text_b"
    return "pair", Pair(line_number, text_a, text_b, int(label))


def read_pairs(path, log_fn=print):
    """Reads one LCQMC file. Returns ([Pair], ReadReport); see the module doc.

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
            kind, value = parse_line(raw, line_number)
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
