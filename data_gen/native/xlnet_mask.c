/* data_gen.modes.xlnet.xlnet_masking's choice of positions to predict, same draws (see xlnet.h). */
#include "xlnet.h"

/* sample_spans: marks the spans' units taken; *count = their tokens. */
static int sample_spans(Part *p, Py_ssize_t part_begin, Py_ssize_t part_end, Py_ssize_t goal,
                        const Recipe *rc, Rng *r, Py_ssize_t *count_out)
{
    Py_ssize_t count = 0, cursor = part_begin;
    double x;
    while (count < goal && cursor < part_end) {
        if (xlnet_draw(r, &x) < 0) return -1;
        Py_ssize_t n = rc->n_cum;
        for (Py_ssize_t i = 0; i < rc->n_cum; i++)
            if (x < rc->cum[i]) { n = i + 1; break; }
        if (n > goal - count) n = goal - count;
        Py_ssize_t context = n * rc->alpha / rc->beta;
        if (xlnet_draw(r, &x) < 0) return -1;
        Py_ssize_t left = (Py_ssize_t)(x * (double)context);
        Py_ssize_t first = xlnet_bisect_left(p->b, p->n, cursor + left), last = first;
        if (first == p->n) break;
        Py_ssize_t span_begin = p->b[first], span_end = span_begin;
        while (last < p->n && last - first < n) {
            if ((p->b[last] != span_end && last != first) ||
                count + p->e[last] - span_begin > goal)
                break;
            span_end = p->e[last++];
        }
        if (last == first) break;
        memset(p->taken + first, 1, (size_t)(last - first));
        count += span_end - span_begin;
        cursor = span_end + context - left;
    }
    *count_out = count;
    return 0;
}

/* _can_make over lengths[1..total] (longer units never fit). */
static int can_make(const Work *w, Py_ssize_t total)
{
    if (total <= 0 || w->lengths[1] >= total) return total >= 0;
    unsigned char *reach = w->reach;
    memset(reach, 0, (size_t)total + 1);
    reach[0] = 1;
    for (Py_ssize_t length = 1; length <= total; length++) {
        Py_ssize_t times = w->lengths[length] < total / length ? w->lengths[length]
                                                               : total / length;
        for (Py_ssize_t t = 0; t < times; t++)
            for (Py_ssize_t sum = total; sum >= length; sum--)
                reach[sum] |= reach[sum - length];
    }
    return reach[total];
}

/* top_up: marks free units adding up to need; *short_out = 0, or need if impossible. */
static int top_up(Part *p, Py_ssize_t need, Work *w, Rng *r, Py_ssize_t *short_out)
{
    Py_ssize_t n_free = 0, counted = need, pick;
    double x;
    *short_out = 0;
    if (need <= 0) return 0;
    memset(w->lengths, 0, sizeof(Py_ssize_t) * (size_t)(counted + 1));
    for (Py_ssize_t i = 0; i < p->n; i++)
        if (!p->taken[i]) {
            w->free[n_free++] = i;
            if (p->e[i] - p->b[i] <= counted) w->lengths[p->e[i] - p->b[i]]++;
        }
    if (!can_make(w, need)) {
        *short_out = need;
        return 0;
    }
    while (need) {
        if (xlnet_draw(r, &x) < 0 || xlnet_pick_index(x, n_free, &pick) < 0) return -1;
        Py_ssize_t index = w->free[pick], length = p->e[index] - p->b[index];
        w->free[pick] = w->free[--n_free];
        if (length <= counted) w->lengths[length]--;
        if (length <= need && can_make(w, need - length)) {
            p->taken[index] = 1;
            need -= length;
        }
    }
    return 0;
}

static int fill_part(Part *p, Py_ssize_t begin, Py_ssize_t end, Py_ssize_t goal,
                     const Recipe *rc, Work *w, Rng *r, Py_ssize_t *short_out)
{
    Py_ssize_t count;
    memset(p->taken, 0, (size_t)p->n);
    if (sample_spans(p, begin, end, goal, rc, r, &count) < 0) return -1;
    return top_up(p, goal - count, w, r, short_out);
}

int xlnet_choose_is_masked(const Recipe *rc, Work *w, Rng *r)
{
    Py_ssize_t goal = rc->goal, reuse_goal = goal - goal / 2, short_by;
    if (fill_part(&w->reuse, 0, rc->reuse, reuse_goal, rc, w, r, &short_by) < 0 ||
        fill_part(&w->rest, rc->reuse, rc->seq, goal / 2 + short_by, rc, w, r, &short_by) < 0)
        return -1;
    if (short_by) {
        if (top_up(&w->reuse, short_by, w, r, &short_by) < 0) return -1;
        if (short_by) return 0;
    }
    memset(w->is_masked, 0, (size_t)rc->seq);
    const Part *parts[2] = {&w->reuse, &w->rest};
    for (int k = 0; k < 2; k++)
        for (Py_ssize_t i = 0; i < parts[k]->n; i++)
            if (parts[k]->taken[i])
                memset(w->is_masked + parts[k]->b[i], 1,
                       (size_t)(parts[k]->e[i] - parts[k]->b[i]));
    return 1;
}

