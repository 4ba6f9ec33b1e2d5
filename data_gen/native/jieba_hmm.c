/* data_gen.native._jieba, the HMM (jieba.finalseg.cut): Viterbi over B M E S
 * on runs of Han characters, and the regex split of the text between them. */
#include "jieba.h"

/* ---- HMM: jieba.finalseg.cut ---- */

static const double *emit_find(const Cutter *s, Py_UCS4 c) {
    size_t i = slot_hash(0, c) & s->emit_mask;
    for (; s->emit[i].used; i = (i + 1) & s->emit_mask)
        if (s->emit[i].c == c) return s->emit[i].p;
    return NULL;
}

/* an HMM word; split into characters when it is in Force_Split_Words */
static int emit_hmm_word(Ctx *ctx, Py_ssize_t a, Py_ssize_t b) {
    PyObject *word = PyUnicode_Substring(ctx->text, a, b), *force = ctx->self->force_split;
    int split;
    if (word == NULL) return -1;
    if (PySet_GET_SIZE(force) > 0 && (split = PySet_Contains(force, word)) != 0) {
        Py_DECREF(word);
        return split < 0 ? -1 : emit_chars(ctx, a, b);
    }
    return append_new(ctx->words, word);
}

/* Viterbi over B M E S on the Han run text[a:b], then its words. A back-pointer
 * byte holds 2 bits per state (B in bits 0-1 ... S in bits 6-7): the previous
 * state. Ties go to the later letter (S over E, M over B), as in jieba. */
static int viterbi_cut(Ctx *ctx, Py_ssize_t a, Py_ssize_t b) {
    const Cutter *s = ctx->self;
    const double low = s->low, *t = s->trans;
    unsigned char *st = ctx->states;
    Py_ssize_t n = b - a, i, begin = 0, next = 0;
    const double *e = emit_find(s, CHAR(ctx, a));
    double v_b = s->start[ST_B] + (e ? e[ST_B] : low), v_m = s->start[ST_M] + (e ? e[ST_M] : low);
    double v_e = s->start[ST_E] + (e ? e[ST_E] : low), v_s = s->start[ST_S] + (e ? e[ST_S] : low);
    int state, pb, pm, pe, ps;
    for (i = 1; i < n; i++) {
        double em_b, em_m, em_e, em_s, b_e, b_s, m_m, m_b, s_s, s_e, e_b, e_m;
        e = emit_find(s, CHAR(ctx, a + i));
        em_b = e ? e[ST_B] : low, em_m = e ? e[ST_M] : low;
        em_e = e ? e[ST_E] : low, em_s = e ? e[ST_S] : low;
        b_e = v_e + t[0] + em_b, b_s = v_s + t[1] + em_b; /* into B from E or S */
        m_m = v_m + t[2] + em_m, m_b = v_b + t[3] + em_m; /* into M from M or B */
        s_s = v_s + t[4] + em_s, s_e = v_e + t[5] + em_s; /* into S from S or E */
        e_b = v_b + t[6] + em_e, e_m = v_m + t[7] + em_e; /* into E from B or M */
        pb = b_s >= b_e ? ST_S : ST_E;
        pm = m_m >= m_b ? ST_M : ST_B;
        pe = e_m >= e_b ? ST_M : ST_B;
        ps = s_s >= s_e ? ST_S : ST_E;
        st[i] = (unsigned char)(pb | pm << 2 | pe << 4 | ps << 6);
        v_b = pb == ST_S ? b_s : b_e;
        v_m = pm == ST_M ? m_m : m_b;
        v_e = pe == ST_M ? e_m : e_b;
        v_s = ps == ST_S ? s_s : s_e;
    }
    /* walk back, replacing each back-pointer byte by its position's state */
    state = v_s >= v_e ? ST_S : ST_E;
    for (i = n - 1; i > 0; i--) {
        int pointers = st[i];
        st[i] = (unsigned char)state;
        state = (pointers >> (2 * state)) & 3;
    }
    st[0] = (unsigned char)state;
    for (i = 0; i < n; i++) { /* B opens a word, E closes it, S is one; M continues */
        if (st[i] == ST_B) {
            begin = i;
        } else if (st[i] == ST_E || st[i] == ST_S) {
            if (emit_hmm_word(ctx, a + (st[i] == ST_E ? begin : i), a + i + 1) < 0) return -1;
            next = i + 1;
        }
    }
    return next < n ? emit_hmm_word(ctx, a + next, b) : 0;
}

/* Non-Han text in the HMM: the non-empty pieces of
 * re.split('([a-zA-Z0-9]+(?:\.\d+)?%?)'): each match and each stretch between. */
static int hmm_other(Ctx *ctx, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t q, r;
    for (; a < b; a = r) {
        for (q = a; q < b && !is_ascii_alnum(CHAR(ctx, q)); q++) {}
        if (q > a && emit_word(ctx, a, q) < 0) return -1;
        if (q == b) break;
        for (r = q + 1; r < b && is_ascii_alnum(CHAR(ctx, r)); r++) {}
        if (r + 1 < b && CHAR(ctx, r) == '.' && Py_UNICODE_ISDECIMAL(CHAR(ctx, r + 1)))
            for (r += 2; r < b && Py_UNICODE_ISDECIMAL(CHAR(ctx, r)); r++) {}
        if (r < b && CHAR(ctx, r) == '%') r++;
        if (emit_word(ctx, q, r) < 0) return -1;
    }
    return 0;
}

/* finalseg.cut(text[a:b]): Viterbi on runs of Han characters, hmm_other between */
int zj_hmm_cut(Ctx *ctx, Py_ssize_t a, Py_ssize_t b) {
    while (a < b) {
        int han = is_han(CHAR(ctx, a));
        Py_ssize_t q = a + 1;
        while (q < b && is_han(CHAR(ctx, q)) == han) q++;
        if ((han ? viterbi_cut(ctx, a, q) : hmm_other(ctx, a, q)) < 0) return -1;
        a = q;
    }
    return 0;
}
