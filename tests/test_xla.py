"""--use_xla compiles the training step on CPU, and XLA's weights equal the plain graph's."""
import numpy as np
import tensorflow.compat.v1 as tf

from cli_testutil import module_command, run_parallel, tool_env
from pretrain_testdata import make_examples, tiny_config, write_records

XLA_FLAGS = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"


def test_use_xla_compiles_and_trains_two_steps_like_the_plain_graph(tmp_path):
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
    names = [n for n in reference.get_variable_to_shape_map() if n.startswith(("bert/", "cls/"))]
    assert len(names) > 40
    for name in names:  # the optimizer's update (the fused Adam in its cond) included
        np.testing.assert_allclose(compiled.get_tensor(name), reference.get_tensor(name),
                                   rtol=1e-4, atol=1e-5, err_msg=name)
