"""Independent NumPy forward pass of BERT and both ALBERT layouts.

Written from the architecture description (not from pretrain/), reading
weights by their checkpoint names from a dict {name: ndarray}. Used by the
tests to check the TensorFlow graph numerically.
"""
import math

import numpy as np


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


class NumpyEncoder(object):
    """Forward pass; `w` maps checkpoint variable names to float64 arrays."""

    def __init__(self, config, weights):
        self.c = config
        self.w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
        self.cond, self.score_sum = None, None

    def lin(self, x, scope):
        return x @ self.w[scope + "/kernel"] + self.w[scope + "/bias"]

    def ln(self, x, scope):
        """LayerNorm of [B, S, W]; with a condition, gamma and beta gain condition @ kernel."""
        gamma, beta = self.w[scope + "/gamma"], self.w[scope + "/beta"]
        if self.cond is not None:
            gamma = gamma + (self.cond @ self.w[scope + "/gamma_dense/kernel"])[:, None]
            beta = beta + (self.cond @ self.w[scope + "/beta_dense/kernel"])[:, None]
        return layer_norm(x, gamma, beta)

    def embed(self, ids, types):
        c, w = self.c, self.w
        x = w["bert/embeddings/word_embeddings"][ids]
        if c.get("albert_layout") == "brightmart":
            x = x @ w["bert/embeddings/word_embeddings_2"]
        seq = ids.shape[1]
        x = x + w["bert/embeddings/token_type_embeddings"][types]
        table = w["bert/embeddings/position_embeddings"]
        alpha = c.get("hierarchical_position")
        if alpha:  # hierarchical: position i*n + j is alpha*u_i + (1-alpha)*u_j
            n = table.shape[0]
            u = (table - alpha * table[0]) / (1.0 - alpha)
            i, j = np.divmod(np.arange(seq), n)
            positions = alpha * u[i] + (1.0 - alpha) * u[j]
        else:
            positions = table[:seq]
        x = x + positions[None]
        return self.ln(x, "bert/embeddings/LayerNorm")

    def attend(self, x, mask, names):
        """Attention context [B, S, N*Dv]; keeps the running score sum for RealFormer."""
        c = self.c
        heads = c["num_attention_heads"]
        b, s, h = x.shape
        dk = c.get("attention_key_size") or h // heads
        dv = c.get("attention_head_size") or h // heads

        def split(t, d):
            return t.reshape(b, s, heads, d).transpose(0, 2, 1, 3)

        q, k = (split(self.lin(x, names[n]), dk) for n in ("q", "k"))
        v = split(self.lin(x, names["v"]), dv)
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dk)
        if c.get("residual_attention"):
            if self.score_sum is not None:
                scores = scores + self.score_sum
            self.score_sum = scores
        scores = scores + (1.0 - mask[:, None]) * -10000.0
        return (softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(b, s, heads * dv)

    def block(self, x, mask, names):
        a = self.ln(self.lin(self.attend(x, mask, names), names["ao"]) + x, names["aln"])
        f = self.lin(gelu_tanh(self.lin(a, names["fi"])), names["fo"])
        return self.ln(f + a, names["fln"])

    def pre_ln_block(self, x, mask, names):
        """Pre-LayerNorm block: LN on each sub-layer's input, plain residuals."""
        a = x + self.lin(self.attend(self.ln(x, names["aln"]), mask, names), names["ao"])
        return a + self.lin(gelu_tanh(self.lin(self.ln(a, names["fln"]), names["fi"])),
                            names["fo"])

    def layer_names(self, i):
        """Scope names of the blocks run as layer i (several for inner groups)."""
        c = self.c
        if c.get("model_type") == "albert" and c.get("albert_layout") == "google":
            group = int(i / c["num_hidden_layers"] * c.get("num_hidden_groups", 1))
            return [self.google_names("bert/encoder/transformer/group_%d/inner_group_%d/"
                                      % (group, j)) for j in range(c.get("inner_group_num", 1))]
        p = "bert/encoder/%s/" % ("layer_shared" if c.get("model_type") == "albert"
                                  else "layer_%d" % i)
        return [{"q": p + "attention/self/query", "k": p + "attention/self/key",
                 "v": p + "attention/self/value", "ao": p + "attention/output/dense",
                 "aln": p + "attention/output/LayerNorm", "fi": p + "intermediate/dense",
                 "fo": p + "output/dense", "fln": p + "output/LayerNorm"}]

    @staticmethod
    def google_names(p):
        return {"q": p + "attention_1/self/query", "k": p + "attention_1/self/key",
                "v": p + "attention_1/self/value", "ao": p + "attention_1/output/dense",
                "aln": p + "LayerNorm", "fi": p + "ffn_1/intermediate/dense",
                "fo": p + "ffn_1/intermediate/output/dense", "fln": p + "LayerNorm_1"}

    def forward(self, ids, mask, types, condition=None, attn_mask=None):
        """Returns (sequence_output [B,S,H], pooled [B,H], all layers list).

        condition: [B, C] for conditional LayerNorm (mapped by
        bert/layer_norm_cond/dense when the config has a hidden size);
        attn_mask: [B, S, S] 1/0 (default: every real token sees every real token).
        """
        ids, types = np.asarray(ids), np.asarray(types)
        mask2d = np.asarray(mask, dtype=np.float64)
        if attn_mask is None:
            attn_mask = np.repeat(mask2d[:, None, :], ids.shape[1], axis=1)
        attn_mask = np.asarray(attn_mask, dtype=np.float64)
        self.cond, self.score_sum = None, None
        if condition is not None:
            self.cond = np.asarray(condition, dtype=np.float64)
            if self.c.get("layer_norm_cond_hidden_size"):
                self.cond = self.lin(self.cond, "bert/layer_norm_cond/dense")
                act = self.c.get("layer_norm_cond_hidden_act", "linear")
                self.cond = {"linear": lambda t: t, "gelu": gelu_tanh, "relu":
                             lambda t: np.maximum(t, 0), "tanh": np.tanh}[act](self.cond)
        x = self.embed(ids, types)
        if "bert/encoder/embedding_hidden_mapping_in/kernel" in self.w:
            x = self.lin(x, "bert/encoder/embedding_hidden_mapping_in")
        layers = []
        for i in range(self.c["num_hidden_layers"]):
            block = self.pre_ln_block if self.c.get("layer_norm_position") == "pre" else self.block
            for names in self.layer_names(i):
                x = block(x, attn_mask, names)
            layers.append(x)
        pooled = np.tanh(self.lin(x[:, 0], "bert/pooler/dense"))
        return x, pooled, layers


def span_boundary_log_probs(w, sequence, table, positions, left, right, act=gelu_tanh):
    """SpanBERT's SBO head: log-probabilities [B*P, V] of each prediction's token.

    y = MLP([h_left; h_right; p_k]) with k = position - left - 1 clipped to the
    relative position table; each MLP layer is dense -> GELU -> LayerNorm; the
    decoder is the word-embedding table `table` [V, E] plus the head's own bias.
    `w` maps checkpoint names (cls/span_boundary/...) to arrays.
    """
    p = "cls/span_boundary/"
    w = {k: np.asarray(v, dtype=np.float64) for k, v in w.items() if k.startswith(p)}
    rows = w[p + "position_embeddings"].shape[0]
    batch = np.arange(sequence.shape[0])[:, None]
    k = np.clip(positions - left - 1, 0, rows - 1)
    x = np.concatenate([sequence[batch, left], sequence[batch, right],
                        w[p + "position_embeddings"][k]], axis=-1)
    x = x.reshape(-1, x.shape[-1])
    for dense, norm in (("dense", "LayerNorm"), ("dense_1", "LayerNorm_1")):
        t = p + "transform/"
        x = act(x @ w[t + dense + "/kernel"] + w[t + dense + "/bias"])
        x = layer_norm(x, w[t + norm + "/gamma"], w[t + norm + "/beta"])
    logits = x @ np.asarray(table, dtype=np.float64).T + w[p + "output_bias"]
    logits = logits - logits.max(axis=-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))


def assert_weighted_prediction_loss(got, ref_log_probs, labels, weights, ulps):
    """got = (loss, per_example [N], log_probs [N, V]) of a prediction head match
    ref_log_probs [N, V] with labels / weights [B, P] (the weighted mean of
    pretrain.models.heads), within `ulps` (tests/testutil/float32_bounds.py) of the log-probs'
    magnitude: the head's chain of sums up to and including the log-softmax over V."""
    from tests.testutil.float32_bounds import assert_close, summation_ulps  # pylint: disable=import-outside-toplevel
    got_loss, got_per_example, got_log_probs = got
    count = ref_log_probs.shape[0]
    ref_per_example = -ref_log_probs[np.arange(count), labels.reshape(-1)]
    ref_loss = (ref_per_example * weights.reshape(-1)).sum() / (weights.sum() + 1e-5)
    assert got_log_probs.shape == ref_log_probs.shape and got_log_probs.dtype == np.float32
    assert_close(got_log_probs, ref_log_probs, ulps, err_msg="log_probs")
    # a gathered log-prob carries the log-probs' error, at their magnitude
    assert_close(got_per_example, ref_per_example, ulps, scale=np.abs(ref_log_probs).max(),
                 err_msg="per_example")
    # the weighted mean adds one sum over the N predictions
    assert_close(got_loss, ref_loss, ulps + summation_ulps(count),
                 scale=np.abs(ref_log_probs).max(), err_msg="loss")
