/* data_gen.native._jieba, the dictionary cut: the best route through each
 * re_han block (get_DAG and calc), its words with runs of single characters
 * buffered (to the HMM or joined), and the split of the text into blocks. */
#include "jieba.h"

/* ---- best route: jieba's get_DAG and calc in one backward pass ----
 * From each start (the block's last first) the fragment grows while it is a
 * FREQ key; each key with a nonzero count ending at i is a candidate scored
 * log(count) - logtotal + score[i + 1]. The best wins, ties to the longer
 * word; with no candidate the character alone scores log(1) - logtotal + ... */
static int route(Ctx *ctx, Py_ssize_t begin, Py_ssize_t end) {
    const Cutter *s = ctx->self;
    Py_ssize_t start, i;
    ctx->score[end] = 0.0;
    for (start = end - 1; start >= begin; start--) {
        double best = 0.0, lg = 0.0;
        int have_best = 0, truth, kind = 0, found;
        Py_ssize_t best_i = start;
        uint32_t node = ROOT;
        for (i = start; i < end; i++) {
            node = trie_child(s, node, CHAR(ctx, i));
            if (node == NO_NODE || (kind = (int)(s->nodes[node].key >> 24)) == K_PREFIX) break;
            if ((truth = kind == K_LOG)) {
                lg = s->nodes[node].lg;
            } else if (kind == K_SLOW &&
                       (found = zj_slow_count(ctx, start, i + 1, 1, &truth, &lg)) <= 0) {
                if (found < 0) return -1;
                break;
            }
            if (truth) {
                double candidate = lg - s->logtotal + ctx->score[i + 1];
                if (!have_best || candidate >= best) {
                    best = candidate;
                    best_i = i;
                    have_best = 1;
                }
            }
        }
        if (!have_best) best = 0.0 - s->logtotal + ctx->score[start + 1];
        ctx->score[start] = best;
        ctx->best_end[start] = best_i + 1;
    }
    return 0;
}
/* ---- blocks ---- */

/* A run text[a:b] of one-character words (HMM mode): a single character is a
 * word; a FREQ key with a nonzero count is split into characters; anything
 * else goes to the HMM. */
static int flush_buffer(Ctx *ctx, Py_ssize_t a, Py_ssize_t b) {
    const Cutter *s = ctx->self;
    uint32_t node = ROOT;
    Py_ssize_t i;
    int kind = 0, truth;
    double unused;
    if (b - a == 1) return emit_word(ctx, a, b);
    for (i = a; i < b && node != NO_NODE; i++) node = trie_child(s, node, CHAR(ctx, i));
    if (node != NO_NODE) kind = (int)(s->nodes[node].key >> 24);
    truth = kind == K_LOG;
    if (kind == K_SLOW && zj_slow_count(ctx, a, b, 0, &truth, &unused) < 0) return -1;
    return truth ? emit_chars(ctx, a, b) : zj_hmm_cut(ctx, a, b);
}

/* One re_han block text[a:b]: the words of the best route, where runs of
 * one-character words are buffered: all of them with the HMM (flush_buffer),
 * only ASCII letters and digits without it (joined into one word). */
static int cut_block(Ctx *ctx, Py_ssize_t a, Py_ssize_t b, int hmm) {
    Py_ssize_t x, y, buf = -1;
    if (route(ctx, a, b) < 0) return -1;
    for (x = a; x < b; x = y) {
        y = ctx->best_end[x];
        if (y - x == 1 && (hmm || is_ascii_alnum(CHAR(ctx, x)))) {
            if (buf < 0) buf = x;
            continue;
        }
        if (buf >= 0 && (hmm ? flush_buffer(ctx, buf, x) : emit_word(ctx, buf, x)) < 0) return -1;
        buf = -1;
        if (emit_word(ctx, x, y) < 0) return -1;
    }
    if (buf >= 0) return hmm ? flush_buffer(ctx, buf, b) : emit_word(ctx, buf, b);
    return 0;
}

/* re_han blocks are cut; any other character is a word by itself, except that
 * "\r\n" is one word (jieba's re_skip). */
int zj_cut_text(Ctx *ctx, Py_ssize_t n, int hmm) {
    Py_ssize_t p, q;
    for (p = 0; p < n; p = q) {
        Py_UCS4 c = CHAR(ctx, p);
        q = p + 1;
        if (is_block_char(c)) {
            while (q < n && is_block_char(CHAR(ctx, q))) q++;
            if (cut_block(ctx, p, q, hmm) < 0) return -1;
        } else {
            if (c == '\r' && q < n && CHAR(ctx, q) == '\n') q++;
            if (emit_word(ctx, p, q) < 0) return -1;
        }
    }
    return 0;
}
