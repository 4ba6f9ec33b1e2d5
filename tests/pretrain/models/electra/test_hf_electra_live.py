"""Live ELECTRA interop against transformers' own code; every test skips without
torch/transformers (tests/pretrain/models/electra/test_hf_electra.py covers the same ground from a fixture).

Our side runs in this process (run_pretraining, pretrain.interop, our TF graph through
electra_hf_bounds), transformers' side too (eval mode, float32). Outputs must agree to the
bound of two libraries' float32 evaluations of each output's longest chain
(hf_interop.interop_ulps with electra_hf_bounds.electra_chain; kernel-path sensitive).
One way to get an environment with both (nothing enters .venv):

    python3.11 -m venv /tmp/hflive
    /tmp/hflive/bin/pip install torch==2.13.0 transformers==4.57.6 'numpy<2'
    echo "$PWD/.venv/lib/python3.11/site-packages" > /tmp/hflive/lib/python3.11/site-packages/zz.pth
    PYTHONPATH=.:tests USE_TF=0 /tmp/hflive/bin/python -m pytest -q tests/pretrain/models/electra/test_hf_electra_live.py
"""
import pathlib

import numpy as np
import pytest
import tensorflow.compat.v1 as tf
from safetensors.numpy import load_file

from tests.testutil.electra_hf_bounds import FIXTURES, electra_bound, electra_outputs, load_fixture_arrays
from pretrain import run_pretraining
from pretrain.checkpoints import checkpoint_io
from pretrain.models.electra import hf as hf_electra
from pretrain.interop.export_hf import export_model
from pretrain.interop.import_hf import import_model
from pretrain.models import registry
from tests.testutil.pretrain_data import make_examples, tiny_config, write_records
from tests.testutil.hf_interop import hf  # noqa: F401  the fixture: torch and transformers, or a skip
from tests.testutil.float32_bounds import assert_close

VOCAB = FIXTURES / "discriminator" / "vocab.txt"  # 115 tokens


@pytest.fixture(scope="module")
def trained(hf, tmp_path_factory):  # pylint: disable=redefined-outer-name,unused-argument
    """3 steps of ELECTRA run_pretraining (Adam slots, global_step and all): (config, prefix)."""
    root = tmp_path_factory.mktemp("electra_run")
    config_file = tiny_config(root / "bert_config.json", vocab_size=115, hidden=64,
                              max_position=64, model_type="electra", embedding_size=16,
                              hidden_act="gelu_exact", generator_hidden_size=0.5)
    data = write_records(root / "data.tfrecord", make_examples(8, sentence_task="none", seed=3),
                         mode="roberta", vocab_size=115)
    out = str(root / "run")
    run_pretraining.run(dict(
        bert_config_file=config_file, input_file=data, output_dir=out, do_train=True,
        max_seq_length=16, max_predictions_per_seq=4, train_batch_size=8, learning_rate=1e-2,
        num_train_steps=3, num_warmup_steps=0, save_checkpoints_steps=1000, random_seed=1,
        shuffle_buffer=0))
    return registry.read_config(config_file), tf.train.latest_checkpoint(out)


def _inputs():
    arrays = load_fixture_arrays()
    return arrays["input_ids"], arrays["attention_mask"], arrays["token_type_ids"]


def _run_torch(hf, model, ids, mask, segments):
    model.eval()
    as_long = lambda array: hf.torch.tensor(np.asarray(array), dtype=hf.torch.long)  # noqa: E731
    with hf.torch.no_grad():
        out = model(input_ids=as_long(ids), attention_mask=as_long(mask),
                    token_type_ids=as_long(segments), output_hidden_states=True)
    return out.logits.numpy(), out.hidden_states[-1].numpy()


def _compare(hf, config, disc, gen, ours, mask):
    """transformers' outputs against ours at the real positions, each to the bound of its
    chain (electra_bound)."""
    real = np.asarray(mask).astype(bool)
    logits, sequence = _run_torch(hf, disc, *_inputs())
    gen_logits, gen_sequence = _run_torch(hf, gen, *_inputs())
    log_probs = hf.torch.log_softmax(hf.torch.from_numpy(gen_logits), -1).numpy()
    theirs = {"disc_logits": logits, "disc_sequence_output": sequence,
              "gen_mlm_log_probs": log_probs, "gen_sequence_output": gen_sequence}
    for key, value in theirs.items():
        ulps, scale = electra_bound(config, ours, key, value[real], real)
        assert_close(ours[key][real], value[real], ulps, scale=scale, err_msg=key)


def test_transformers_tf_loader_reads_our_run_pretraining_checkpoint(hf, trained):
    """Kernel-path sensitive: our numbers against transformers', to the bound of two
    libraries' float32 evaluations (_compare)."""
    config, prefix = trained
    names = dict(tf.train.list_variables(prefix))
    assert {"global_step", "generator/encoder/layer_0/output/dense/kernel/adam_v"} <= set(names)
    configs = hf_electra.hf_configs(config)
    models = {}
    for network, model_class in (("discriminator", hf.T.ElectraForPreTraining),
                                 ("generator", hf.T.ElectraForMaskedLM)):
        model = model_class(hf.T.ElectraConfig(attn_implementation="eager", **{
            key: value for key, value in configs[network].items()
            if key not in ("architectures", "model_type")}))
        models[network] = hf.T.models.electra.load_tf_weights_in_electra(
            model, model.config, prefix, discriminator_or_generator=network)
    # Every parameter holds the tensor our export gives it: the loader skipped none.
    tensors = checkpoint_io.read_checkpoint(prefix, [n for n in names if not n.endswith(
        ("/adam_m", "/adam_v")) and n != "global_step"])
    for part in hf_electra.export_parts(tensors, config):
        state = {key: value.numpy() for key, value in models[part.network].state_dict().items()}
        assert set(part.state_dict) <= set(state), part.network
        for key, value in part.state_dict.items():  # copied by the loader: bit for bit
            assert np.array_equal(state[key], value), (part.network, key)
        left = set(state) - set(part.state_dict) - {"electra.embeddings.position_ids",
                                                     "generator_lm_head.weight"}
        assert not left, (part.network, left)
    ours = electra_outputs(config, prefix, *_inputs())
    _compare(hf, config, models["discriminator"], models["generator"], ours, _inputs()[1])


def test_exported_pair_loads_with_auto_classes_and_our_numbers(hf, trained, tmp_path):
    """Kernel-path sensitive: our numbers against transformers', to the bound of two
    libraries' float32 evaluations (_compare)."""
    config, prefix = trained
    export_model(prefix, output_dir=tmp_path / "hf", vocab_file=str(VOCAB), log_fn=None)
    loaded = {}
    for network, auto in (("discriminator", hf.T.AutoModelForPreTraining),
                          ("generator", hf.T.AutoModelForMaskedLM)):
        model, info = auto.from_pretrained(str(tmp_path / "hf" / network),
                                           output_loading_info=True,
                                           attn_implementation="eager")
        assert type(model).__name__ == hf_electra.ARCHITECTURES[network]
        assert not info["missing_keys"] and not info["unexpected_keys"], info
        loaded[network] = model
        tokenizer = hf.T.AutoTokenizer.from_pretrained(str(tmp_path / "hf" / network))
        ids = tokenizer("我是中国人", "你在这里")["input_ids"]
        assert ids == [2, 11, 7, 16, 20, 10, 3, 28, 12, 15, 53, 3]
    assert loaded["generator"].generator_lm_head.weight.data_ptr() == \
        loaded["generator"].electra.embeddings.word_embeddings.weight.data_ptr()  # tied
    ours = electra_outputs(config, prefix, *_inputs())
    _compare(hf, config, loaded["discriminator"], loaded["generator"], ours, _inputs()[1])


def test_untied_transformers_pair_imports_with_its_numbers(hf, tmp_path):
    """A pair whose generator has its own embeddings (E = Hg = 16, no projection), the
    discriminator E = H = 32: both the untied and the unprojected paths. Kernel-path
    sensitive (_compare)."""
    shared = dict(vocab_size=115, max_position_embeddings=64, type_vocab_size=2,
                  hidden_act="gelu", initializer_range=0.2, attn_implementation="eager")
    hf.torch.manual_seed(0)
    disc = hf.T.ElectraForPreTraining(hf.T.ElectraConfig(
        embedding_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=37, **shared))
    gen = hf.T.ElectraForMaskedLM(hf.T.ElectraConfig(
        embedding_size=16, hidden_size=16, num_hidden_layers=1, num_attention_heads=1,
        intermediate_size=64, **shared))
    with hf.torch.no_grad():
        for model in (disc, gen):
            for parameter in model.parameters():
                parameter.add_(hf.torch.randn_like(parameter) * 0.1)
    for name, model in (("d", disc), ("g", gen)):
        model.save_pretrained(str(tmp_path / name))
        (tmp_path / name / "vocab.txt").write_bytes(pathlib.Path(VOCAB).read_bytes())
    report = import_model(tmp_path / "d", tmp_path / "out", generator_model_dir=tmp_path / "g",
                          log_fn=None)
    config = report.config
    assert config.untied_generator_embeddings and config.embedding_size is None
    assert (config.generator_hidden_size, config.generator_layers) == (0.5, 0.5)
    ours = electra_outputs(config, report.checkpoint, *_inputs())
    _compare(hf, config, disc, gen, ours, _inputs()[1])
    # and back: the export is what transformers saved
    export_model(report.output_dir, output_dir=tmp_path / "again", log_fn=None)
    for name, network in (("d", "discriminator"), ("g", "generator")):
        theirs = load_file(str(tmp_path / name / "model.safetensors"))
        ours_state = load_file(str(tmp_path / "again" / network / "model.safetensors"))
        assert sorted(ours_state) == sorted(theirs)
        for key, value in theirs.items():  # copied both ways: bit for bit
            assert np.array_equal(ours_state[key], value), key
