"""--use_xla compiles the training step on CPU, and XLA's weights equal the plain graph's."""
import numpy as np
import tensorflow.compat.v1 as tf

from tests.testutil.cli_runs import module_command, run_parallel, tool_env
from tests.testutil.float32_bounds import magnitude
from tests.testutil.pretrain_data import (assert_trained_alike, encoder_gradient_ulps, make_examples,
                               moment_ulps, tiny_config, weight_drift, write_records)

XLA_FLAGS = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"


def test_use_xla_compiles_and_trains_two_steps_like_the_plain_graph(tmp_path):
    """Kernel-path sensitive: XLA fuses and reorders the step's sums and has its own
    elementwise functions, so the two agree to the bound of another evaluation order."""
    tiny_config(tmp_path / "cfg.json")
    write_records(tmp_path / "a.tfrecord", make_examples(16, seed=1))
    common = ["--bert_config_file=cfg.json", "--input_file=a.tfrecord", "--do_train",
              "--train_batch_size=8", "--num_train_steps=2", "--num_warmup_steps=0",
              "--learning_rate=1e-2", "--random_seed=1", "--shuffle_buffer=0"]
    # TF_CPP_MIN_LOG_LEVEL=0: XLA says "Compiled cluster using XLA!" when it compiled one.
    xla_env = tool_env(TF_XLA_FLAGS=XLA_FLAGS)
    xla_env["TF_CPP_MIN_LOG_LEVEL"] = "0"
    runs = run_parallel([
        ("xla", module_command("pretrain.run_pretraining", *common, "--use_xla",
                               "--output_dir=xla"), xla_env),
        ("plain", module_command("pretrain.run_pretraining", *common, "--output_dir=plain")),
    ], tmp_path)
    xla, plain = runs["xla"], runs["plain"]
    assert xla[0] == 0 and plain[0] == 0, xla[2][-3000:] + plain[2][-3000:]
    assert "Compiled cluster using XLA" in xla[2]
    compiled = tf.train.load_checkpoint(str(tmp_path / "xla"))
    reference = tf.train.load_checkpoint(str(tmp_path / "plain"))
    assert compiled.get_tensor("global_step") == 2
    shapes = reference.get_variable_to_shape_map()
    names = [n for n in shapes if n.startswith(("bert/", "cls/"))]
    assert len(names) > 40
    # float32_bounds case 2 through two AdamW updates (1e-2, then 5e-3 of a 2-step
    # schedule), the global norm of all gradients clipped: tiny_config's width 32, 2 layers,
    # 16 tokens, the MLM transform and vocab of 50, the pooler and the sentence head; the
    # batch's 128 tokens. Both runs start from the same random_seed's initial values.
    weights = [n for n in names if not n.endswith(("/adam_m", "/adam_v"))]
    weight_scale = max(magnitude(reference.get_tensor(n)) for n in weights)
    gradient_ulps = encoder_gradient_ulps(32, 64, 16, 2, 2, 8 * 16, [32, 50, 32, 2])
    num_params = int(sum(np.prod(shapes[n]) for n in weights))
    drift = weight_drift([1e-2, 5e-3], gradient_ulps, weight_scale, clip_width=num_params,
                         weight_decay=0.01)
    # the optimizer's update (the fused Adam in its cond) and its slots included
    assert_trained_alike(compiled, reference, names, drift,
                         moment_ulps(gradient_ulps, drift, weight_scale, num_params))
