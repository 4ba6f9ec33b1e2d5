"""Input the corpus reader could not read: what the file probably is, where, and how much.

Two jobs, both for messages that name the fix rather than a way to lose data quietly:
  * a line that is not UTF-8 -> `decode_error_message`: file, line, byte offset and, when
    the file as a whole reads as GB18030 (GBK, GB2312) or Big5, that encoding and the
    `iconv` command that converts it;
  * a run with --on_decode_error=skip -> `unreadable_share` and `first_undecodable_line`,
    from which data_gen.text.corpus_reader.check_unreadable_share names the share, the
    first offending file and line, and the flag.
"""
import os

SHARE_FLAG = "--max_unreadable_share"
SAMPLE_BYTES = 1 << 18  # enough lines to tell an encoding; read only on the failure path
CANDIDATE_ENCODINGS = ("GB18030", "Big5")
# Among the most frequent characters of Chinese text, in both scripts. Text decoded with
# the right codec has ~30% of its Han characters in this set; bytes decoded with the wrong
# one give scattered rare characters (<2%).
_FREQUENT = set(
    "的一是不了在人有我他这這个個们們中来來上大为為和国國地到以说說时時要就出会會可也你对對"
    "生能而子那得于於着著下自之年过過发發后後作里裡用道行所然家种種事成方多经經么麼去法学學如"
    "都同现現没沒动動起看定天分还還进進好小部其些主样樣理心她本前开開但因只从從想实實日者意无"
    "無力它与與长長把机機十民第公此已工使情明性知全三又关關点點正业業外将將两兩高间間由问問很"
    "最重并物手应應战戰向头頭文体體政美相见見被利什二等产產或新己制身果加西月话話合回特代内內")
_MIN_FREQUENT_SHARE = 0.1


def line_number(path, byte_offset):
    """1-based number of the line holding `byte_offset` of `path` (None if not a local file)."""
    if not os.path.isfile(path):
        return None
    lines = 1
    with open(path, "rb") as handle:
        remaining = byte_offset
        while remaining > 0:
            block = handle.read(min(remaining, 1 << 20))
            if not block:
                break
            lines += block.count(b"\n")
            remaining -= len(block)
    return lines


def guess_encoding(sample):
    """'GB18030', 'Big5' or None for `sample` (bytes), a file that is mostly not UTF-8."""
    lines = [line for line in sample.split(b"\n")[:-1] if line.strip()] or [sample]
    utf8_lines = sum(1 for line in lines if _decodes(line, "utf-8"))
    if utf8_lines * 2 > len(lines):
        return None  # UTF-8 with stray bad bytes, not another encoding
    best, best_share = None, _MIN_FREQUENT_SHARE
    for encoding in CANDIDATE_ENCODINGS:
        han = frequent = 0
        for line in lines:
            text = _decoded(line, encoding)
            if text is None:
                continue
            for char in text:
                if "\u4e00" <= char <= "\u9fff":
                    han += 1
                    frequent += char in _FREQUENT
        if han and frequent / han > best_share:
            best, best_share = encoding, frequent / han
    return best


def _decodes(line, encoding):
    return _decoded(line, encoding) is not None


def _decoded(line, encoding):
    try:
        return line.decode(encoding)
    except UnicodeDecodeError:
        return None


def _sample(path):
    if not os.path.isfile(path):  # a remote file: no guess rather than a second read
        return b""
    with open(path, "rb") as handle:
        return handle.read(SAMPLE_BYTES)


def conversion_advice(path, encoding):
    """The sentence telling the user how to make `path` UTF-8."""
    converted = os.path.splitext(path)[0] + ".utf8.txt"
    return (f"the file looks {encoding}-encoded: convert it with "
            f"`iconv -f {encoding.upper()} -t UTF-8 {path} > {converted}` and pass the "
            "converted file")


def advice(path):
    """How to make `path` UTF-8: the conversion for its guessed encoding, or a general hint."""
    sample = _sample(path)
    encoding = guess_encoding(sample) if sample else None
    if encoding:
        return conversion_advice(path, encoding)
    return "convert the file to UTF-8 (e.g. iconv -f GB18030 -t UTF-8 for GBK text)"


def decode_error_message(path, byte_offset, bad_byte, reason):
    """The error for the first line of `path` that is not UTF-8."""
    number = line_number(path, byte_offset)
    where = f"{path}: " + (f"line {number} (byte offset {byte_offset})" if number
                           else f"byte offset {byte_offset}")
    sample = _sample(path)
    encoding = guess_encoding(sample) if sample else None
    if encoding:
        return f"{where}: not UTF-8; {conversion_advice(path, encoding)}"
    return (f"{where}: invalid UTF-8 (byte 0x{bad_byte:02x}: {reason}); convert the file to "
            "UTF-8, or if only a few lines are damaged pass --on_decode_error=skip to drop "
            f"them (the run still stops if more than {SHARE_FLAG} of its lines are dropped)")


def unreadable_share(account):
    """Dropped undecodable lines / non-blank lines read (0.0 when nothing was read)."""
    dropped = account.get("lines_skipped_invalid_utf8", 0)
    total = dropped + account.get("sentences", 0)
    return dropped / total if total else 0.0


def first_undecodable_line(files):
    """(path, line number) of the first non-UTF-8 line over `files`, or (None, None)."""
    for path in files:
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                if not _decodes(raw, "utf-8"):
                    return path, number
    return None, None
