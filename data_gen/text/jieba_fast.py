"""A faster re-implementation of jieba's default ("accurate") cut, same words.

jieba.Tokenizer.cut builds a DAG of dictionary words per position, then a
second pass picks the best route (max sum of log frequencies, ties to the
longer word), then hands runs of single characters not in the dictionary to
its HMM (finalseg). Here the DAG and the route are computed in one backward
pass without intermediate dicts and generators; the block splitting, the
buffer rules and the HMM are jieba's own. tests/data_gen/text/test_segmentation.py checks
that the words equal jieba.lcut's on real text.

The same algorithm is written in C (data_gen/native/_jieba.c, built by
`make setup`); FastJiebaCutter uses it when it is built, unless use_native=False
or ZH_PRETRAIN_PURE_PYTHON=1 (data_gen.native). The Python code below stays
the reference: tests/data_gen/native/test_native_jieba.py checks both give the same words.
The C cutter keeps FREQ as a trie that it rebuilds when FREQ changes (on
CPython 3.11 any change; on later versions only words added or removed).
"""
import re
from math import log

from data_gen import native

# jieba 0.42.1's block patterns (jieba/__init__.py: re_han_default, re_skip_default, re_eng).
_RE_HAN = re.compile("([\u4E00-\u9FD5a-zA-Z0-9+#&\\._%\\-]+)", re.U)
_RE_SKIP = re.compile("(\r\n|\\s)", re.U)
_RE_ENG = re.compile("[a-zA-Z0-9]", re.U)


class FastJiebaCutter:
    """Cuts text into jieba's words using an initialized jieba.Tokenizer's dictionary."""

    def __init__(self, jieba_tokenizer, use_hmm=True, use_native=None):
        """use_native: None = the C cutter when it is built and not disabled,
        False = always the Python code, True = the C cutter or ImportError
        (see data_gen.native.resolve)."""
        jieba_tokenizer.check_initialized()
        self._freq = jieba_tokenizer.FREQ
        self._logtotal = log(jieba_tokenizer.total)
        self._hmm = _HmmCutter()
        self._hmm_cut = self._hmm.cut
        self.use_hmm = use_hmm
        self._native = None
        module = native.resolve("_jieba", use_native)
        if module is not None:
            hmm = self._hmm
            # emission by character as _states reads it: table.get(char, MIN_FLOAT)
            emit = {char: tuple(table.get(char, hmm._min) for table in hmm._emit)
                    for char in set().union(*hmm._emit)}
            self._native = module.Cutter(self._freq, self._logtotal, hmm._start, hmm._trans,
                                         emit, hmm._min, hmm._finalseg.Force_Split_Words)
        self.native = self._native is not None  # True: cut() runs the C code

    def _route(self, block):
        """best_end[i]: end (exclusive) of the word starting at i on the best route."""
        freq_get = self._freq.get
        logtotal = self._logtotal
        length = len(block)
        score = [0.0] * (length + 1)
        best_end = [0] * (length + 1)
        for start in range(length - 1, -1, -1):
            best = None
            best_x = start
            i = start
            frag = block[start]
            while True:
                count = freq_get(frag)
                if count is None:
                    break
                if count:
                    candidate = log(count) - logtotal + score[i + 1]
                    if best is None or candidate >= best:  # ties: the longer word
                        best = candidate
                        best_x = i
                i += 1
                if i >= length:
                    break
                frag = block[start:i + 1]
            if best is None:
                best = log(freq_get(block[start]) or 1) - logtotal + score[start + 1]
            score[start] = best
            best_end[start] = best_x + 1
        return best_end

    def _flush_buffer(self, buf, words):
        if len(buf) == 1:
            words.append(buf)
        elif not self._freq.get(buf):
            words.extend(self._hmm_cut(buf))
        else:
            words.extend(buf)

    def _cut_block_hmm(self, block, words):
        best_end = self._route(block)
        x = 0
        buf = ""
        length = len(block)
        while x < length:
            y = best_end[x]
            if y - x == 1:
                buf += block[x]
            else:
                if buf:
                    self._flush_buffer(buf, words)
                    buf = ""
                words.append(block[x:y])
            x = y
        if buf:
            self._flush_buffer(buf, words)

    def _cut_block_no_hmm(self, block, words):
        best_end = self._route(block)
        x = 0
        buf = ""
        length = len(block)
        while x < length:
            y = best_end[x]
            word = block[x:y]
            if y - x == 1 and _RE_ENG.match(word):
                buf += word
            else:
                if buf:
                    words.append(buf)
                    buf = ""
                words.append(word)
            x = y
        if buf:
            words.append(buf)

    def cut(self, text):
        """Returns the list of words jieba.lcut(text, HMM=use_hmm) returns."""
        if self._native is not None:
            return self._native.cut(text, self.use_hmm)
        return self._cut_python(text)

    def _cut_python(self, text):
        """The reference implementation of cut()."""
        words = []
        cut_block = self._cut_block_hmm if self.use_hmm else self._cut_block_no_hmm
        for block in _RE_HAN.split(text):
            if not block:
                continue
            if _RE_HAN.match(block):
                cut_block(block, words)
            else:
                for piece in _RE_SKIP.split(block):
                    if _RE_SKIP.match(piece):
                        words.append(piece)
                    else:
                        words.extend(piece)
        return words


_RE_HMM_HAN = re.compile("([\u4E00-\u9FD5]+)")
_RE_HMM_SKIP = re.compile("([a-zA-Z0-9]+(?:\\.\\d+)?%?)")


class _HmmCutter:
    """jieba.finalseg.cut with its Viterbi unrolled over the 4 states B M E S.

    Ties are broken as jieba's max over (score, state) tuples does: the
    larger state letter wins. Back-pointers replace jieba's path copies.
    """

    def __init__(self):
        from jieba import finalseg
        self._finalseg = finalseg
        min_float = finalseg.MIN_FLOAT
        start, trans, emit = finalseg.start_P, finalseg.trans_P, finalseg.emit_P
        self._start = (start["B"], start["M"], start["E"], start["S"])
        self._emit = (emit["B"], emit["M"], emit["E"], emit["S"])
        get = lambda a, b: trans[a].get(b, min_float)  # noqa: E731
        self._trans = (get("E", "B"), get("S", "B"), get("M", "M"), get("B", "M"),
                       get("S", "S"), get("E", "S"), get("B", "E"), get("M", "E"))
        self._min = min_float

    def _states(self, obs):
        low = self._min
        e_b, e_m, e_e, e_s = (table.get for table in self._emit)
        t_eb, t_sb, t_mm, t_bm, t_ss, t_es, t_be, t_me = self._trans
        char = obs[0]
        v_b = self._start[0] + e_b(char, low)
        v_m = self._start[1] + e_m(char, low)
        v_e = self._start[2] + e_e(char, low)
        v_s = self._start[3] + e_s(char, low)
        back = []
        for char in obs[1:]:
            em = e_b(char, low)
            b_from_e, b_from_s = v_e + t_eb + em, v_s + t_sb + em
            em = e_m(char, low)
            m_from_m, m_from_b = v_m + t_mm + em, v_b + t_bm + em
            em = e_s(char, low)
            s_from_s, s_from_e = v_s + t_ss + em, v_e + t_es + em
            em = e_e(char, low)
            e_from_b, e_from_m = v_b + t_be + em, v_m + t_me + em
            pointers = ("S" if b_from_s >= b_from_e else "E",
                        "M" if m_from_m >= m_from_b else "B",
                        "M" if e_from_m >= e_from_b else "B",
                        "S" if s_from_s >= s_from_e else "E")
            back.append(pointers)
            v_b = b_from_s if pointers[0] == "S" else b_from_e
            v_m = m_from_m if pointers[1] == "M" else m_from_b
            v_e = e_from_m if pointers[2] == "M" else e_from_b
            v_s = s_from_s if pointers[3] == "S" else s_from_e
        state = "S" if v_s >= v_e else "E"
        states = [state]
        index = {"B": 0, "M": 1, "E": 2, "S": 3}
        for pointers in reversed(back):
            state = pointers[index[state]]
            states.append(state)
        states.reverse()
        return states

    def _cut_han(self, sentence, words):
        states = self._states(sentence)
        begin = next_index = 0
        for i, state in enumerate(states):
            if state == "B":
                begin = i
            elif state == "E":
                words.append(sentence[begin:i + 1])
                next_index = i + 1
            elif state == "S":
                words.append(sentence[i])
                next_index = i + 1
        if next_index < len(sentence):
            words.append(sentence[next_index:])

    def cut(self, sentence):
        """Same words as jieba.finalseg.cut(sentence)."""
        words = []
        force_split = self._finalseg.Force_Split_Words
        for block in _RE_HMM_HAN.split(sentence):
            if _RE_HMM_HAN.match(block):
                found = []
                self._cut_han(block, found)
                for word in found:
                    if word in force_split:
                        words.extend(word)
                    else:
                        words.append(word)
            else:
                words.extend(x for x in _RE_HMM_SKIP.split(block) if x)
        return words
