"""Test helpers for the model tests: expected variable layouts and checkpoints.

`expected_variables()` spells out, from the issue's text (not from
pretrain/), the variable names and shapes each released layout has; the
same function lets tests write checkpoints "as Google / brightmart / ymcui
released them" with random values. For ELECTRA the names and shapes are
google-research/electra's own (tests/fixtures/electra/upstream_variables.json):
`upstream_electra_case()` reads a case as our config dict and its variables.
"""
import json
import pathlib

import numpy as np
import tensorflow.compat.v1 as tf

ELECTRA_FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "electra" / "upstream_variables.json"

TINY = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=24, max_position_embeddings=16, type_vocab_size=2,
            hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
            initializer_range=0.02)


def tiny_config(**overrides):
    d = dict(TINY)
    d.update(overrides)
    return d


def _dense(prefix, n_in, n_out):
    return [(prefix + "/kernel", [n_in, n_out]), (prefix + "/bias", [n_out])]


def _ln(prefix, width):
    return [(prefix + "/gamma", [width]), (prefix + "/beta", [width])]


def _bert_block(prefix, attn, inter, out, h, i):
    return (_dense(prefix + attn + "self/query", h, h) + _dense(prefix + attn + "self/key", h, h)
            + _dense(prefix + attn + "self/value", h, h)
            + _dense(prefix + attn + "output/dense", h, h) + _ln(prefix + attn + "output/LayerNorm", h)
            + _dense(prefix + inter + "dense", h, i)
            + _dense(prefix + out + "dense", i, h) + _ln(prefix + out + "LayerNorm", h))


def expected_variables(c, heads=True):
    """[(name, shape)] for config dict `c` (model_type/albert_layout/sharing)."""
    v, h, i = c["vocab_size"], c["hidden_size"], c["intermediate_size"]
    p, t = c["max_position_embeddings"], c["type_vocab_size"]
    albert = c.get("model_type") == "albert" or "embedding_size" in c
    layout = c.get("albert_layout", "google")
    e = c.get("embedding_size", h) if albert else h
    names = [("bert/embeddings/word_embeddings", [v, e])]
    if albert and layout == "google":
        names += [("bert/embeddings/token_type_embeddings", [t, e]),
                  ("bert/embeddings/position_embeddings", [p, e])] + _ln("bert/embeddings/LayerNorm", e)
        if e != h:
            names += _dense("bert/encoder/embedding_hidden_mapping_in", e, h)
        for g in range(c.get("num_hidden_groups", 1)):
            for j in range(c.get("inner_group_num", 1)):
                b = "bert/encoder/transformer/group_%d/inner_group_%d/" % (g, j)
                names += (_dense(b + "attention_1/self/query", h, h)
                          + _dense(b + "attention_1/self/key", h, h)
                          + _dense(b + "attention_1/self/value", h, h)
                          + _dense(b + "attention_1/output/dense", h, h) + _ln(b + "LayerNorm", h)
                          + _dense(b + "ffn_1/intermediate/dense", h, i)
                          + _dense(b + "ffn_1/intermediate/output/dense", i, h)
                          + _ln(b + "LayerNorm_1", h))
    else:
        if albert:
            names.append(("bert/embeddings/word_embeddings_2", [e, h]))
        names += [("bert/embeddings/token_type_embeddings", [t, h]),
                  ("bert/embeddings/position_embeddings", [p, h])] + _ln("bert/embeddings/LayerNorm", h)
        sharing = c.get("sharing", "all") if albert else "none"
        if sharing == "none":
            for n in range(c["num_hidden_layers"]):
                names += _bert_block("bert/encoder/layer_%d/" % n, "attention/", "intermediate/",
                                     "output/", h, i)
        elif sharing == "all":
            names += _bert_block("bert/encoder/layer_shared/", "attention/", "intermediate/",
                                 "output/", h, i)
        else:
            s = "bert/encoder/layer_shared/"
            attn_block = _bert_block(s, "attention/", "intermediate/", "output/", h, i)[:10]
            for n in range(c["num_hidden_layers"]):
                if sharing == "attention":
                    names += (_dense(s + "intermediate_%d/dense" % n, h, i)
                              + _dense(s + "output_%d/dense" % n, i, h)
                              + _ln(s + "output_%d/LayerNorm" % n, h))
                else:
                    names += _bert_block(s, "attention_%d/" % n, "", "", h, i)[:10]
            if sharing == "attention":
                names += attn_block
            else:
                names += (_dense(s + "intermediate/dense", h, i) + _dense(s + "output/dense", i, h)
                          + _ln(s + "output/LayerNorm", h))
    names = _with_options(names, c)
    names += _dense("bert/pooler/dense", h, h)
    if heads:
        mlm_width = e if (albert and layout == "google") else h
        names += (_dense("cls/predictions/transform/dense", h, mlm_width)
                  + _ln("cls/predictions/transform/LayerNorm", mlm_width)
                  + [("cls/predictions/output_bias", [v]),
                     ("cls/seq_relationship/output_weights", [2, h]),
                     ("cls/seq_relationship/output_bias", [2])])
    return names


def _with_options(names, c):
    """Applies issue 15's options to the encoder's [(name, shape)]: per-head
    query/key width attention_key_size and value width attention_head_size
    (the attention output dense reads N * value width); conditional LayerNorm
    adds bias-free gamma_dense/beta_dense kernels [C', W] to every LayerNorm
    and, with a hidden size, the shared bert/layer_norm_cond/dense [C, C']."""
    h, n = c["hidden_size"], c["num_attention_heads"]
    qk = n * (c.get("attention_key_size") or h // n)
    v = n * (c.get("attention_head_size") or h // n)
    out = []
    for name, shape in names:
        if "/self/query/" in name or "/self/key/" in name:
            shape = [h, qk] if name.endswith("kernel") else [qk]
        elif "/self/value/" in name:
            shape = [h, v] if name.endswith("kernel") else [v]
        elif "attention" in name and name.endswith("output/dense/kernel"):
            shape = [v, h]
        out.append((name, shape))
    cond = c.get("layer_norm_cond_size")
    if cond:
        width = c.get("layer_norm_cond_hidden_size") or cond
        if c.get("layer_norm_cond_hidden_size"):
            out += _dense("bert/layer_norm_cond/dense", cond, width)
        out += [(name[:-len("gamma")] + kind + "/kernel", [width, shape[0]])
                for name, shape in names if name.endswith("/gamma")
                for kind in ("gamma_dense", "beta_dense")]
    return out


def random_weights(c, seed=0, heads=True, scale=0.2):
    """{name: float32 array} with the released layout's names (LayerNorm near 1/0)."""
    rng = np.random.RandomState(seed)
    out = {}
    for name, shape in expected_variables(c, heads):
        value = rng.normal(0.0, scale, size=shape)
        if name.endswith("/gamma"):
            value = 1.0 + value
        out[name] = value.astype(np.float32)
    return out


def upstream_electra_case(name):
    """(config dict of our ElectraConfig, {variable: shape} upstream's graph has) for the
    fixture case `name`, as training_utils.get_bert_config sizes it (heads hidden // 64,
    at least 1; intermediate 4 x hidden)."""
    cases = json.loads(ELECTRA_FIXTURE.read_text(encoding="utf-8"))["cases"]
    case = next(case for case in cases if case["name"] == name)
    hparams = case["hparams"]
    config = dict(hparams["model_hparam_overrides"], model_type="electra",
                  vocab_size=hparams["vocab_size"])
    config.update(intermediate_size=4 * config["hidden_size"],
                  num_attention_heads=max(1, config["hidden_size"] // 64))
    config.update({field: hparams[field] for field in (
        "embedding_size", "generator_hidden_size", "generator_layers",
        "untied_generator_embeddings") if field in hparams})
    return config, dict(case["variables"])


def random_tensors(shapes, seed=0, scale=0.2):
    """{name: float32 array} of the given shapes (LayerNorm gammas near 1)."""
    rng = np.random.RandomState(seed)
    return {name: (rng.normal(0.0, scale, size=shape) + name.endswith("/gamma"))
            .astype(np.float32) for name, shape in sorted(shapes.items())}


def with_upstream_optimizer_state(weights, fill=7.0):
    """`weights` with the optimizer state google-research/bert's and electra's
    AdamWeightDecayOptimizer save: `<var>/adam_m`, `<var>/adam_v` (all `fill`) and
    global_step."""
    state = {"%s/%s" % (name, slot): np.full_like(value, fill)
             for name, value in weights.items() for slot in ("adam_m", "adam_v")}
    return dict(weights, global_step=np.array(1000000, np.int64), **state)


def write_checkpoint(prefix, tensors):
    """Writes {name: ndarray} as a TF1 checkpoint at `prefix`; returns prefix."""
    with tf.Graph().as_default():
        variables = {name: tf.Variable(value, name="v%d" % k)
                     for k, (name, value) in enumerate(sorted(tensors.items()))}
        saver = tf.train.Saver(variables)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            saver.save(session, str(prefix), write_meta_graph=False)
    return str(prefix)


def read_checkpoint(prefix):
    reader = tf.train.load_checkpoint(str(prefix))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def input_batch():
    """A [2, 8] batch: row 0 full, row 1 padded after 5 tokens; two segments."""
    ids = np.array([[2, 7, 9, 11, 3, 5, 8, 3], [2, 4, 6, 3, 10, 0, 0, 0]], np.int32)
    mask = np.array([[1] * 8, [1, 1, 1, 1, 1, 0, 0, 0]], np.int32)
    types = np.array([[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 0, 0, 0]], np.int32)
    return ids, mask, types


class ModelRunner(object):
    """An encoder on [B, S] int32 placeholders (static when `shape` is given) and, for a
    conditional config, a [B, C] float32 condition; initialised from `checkpoint` (its
    load report in `.report`) or from the initialisers. `.variables`: {name: shape}."""

    def __init__(self, config_dict, checkpoint=None, shape=(None, None), **model_kwargs):
        from pretrain.checkpoints import checkpoint_loading  # pylint: disable=import-outside-toplevel
        from pretrain.models import registry  # pylint: disable=import-outside-toplevel
        from pretrain.models.bert import modeling
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.ids, self.mask, self.types = (tf.placeholder(tf.int32, list(shape))
                                               for _ in range(3))
            size = config_dict.get("layer_norm_cond_size")
            self.condition = None if size is None else tf.placeholder(tf.float32, [None, size])
            self.model = registry.create_encoder(
                modeling.BertConfig.from_dict(config_dict), False, self.ids, self.mask,
                self.types, condition=self.condition, **model_kwargs)
            self.variables = {v.op.name: v.shape.as_list() for v in tf.global_variables()}
            self.report = None
            if checkpoint is not None:
                self.report = checkpoint_loading.init_from_checkpoint(checkpoint, log_fn=None)
            self.session = tf.Session()
            self.session.run(tf.global_variables_initializer())

    def run(self, ids, mask, types, condition=None, fetch=None):
        """Default fetch: [sequence output [B, S, H], pooled output [B, H]]."""
        feed = {self.ids: ids, self.mask: mask, self.types: types}
        if self.condition is not None:
            feed[self.condition] = condition
        fetch = fetch or [self.model.get_sequence_output(), self.model.get_pooled_output()]
        return self.session.run(fetch, feed)

    def close(self):
        self.session.close()
