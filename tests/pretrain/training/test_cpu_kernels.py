"""The oneDNN default of the pretrain package: applied before TensorFlow loads, never after."""
import os
import subprocess
import sys

from pretrain import cpu_kernels

from tests.conftest import REPO_ROOT

PROBE = """
import pretrain
import tensorflow.compat.v1 as tf
from pretrain import cpu_kernels
tf.disable_eager_execution()
inputs = tf.random.normal([8, 8])  # not a constant, so not folded away
product = tf.matmul(inputs, inputs)
with tf.Session() as session:
    metadata = tf.RunMetadata()
    session.run(product, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                run_metadata=metadata)
kernels = {node.timeline_label.split(" = ")[-1].split("(")[0]
           for device in metadata.step_stats.dev_stats for node in device.node_stats
           if node.timeline_label.split("(")[0].endswith("MatMul")}
print(cpu_kernels.onednn_enabled(), sorted(kernels))
"""


def run_probe(onednn_variable):
    env = {k: v for k, v in os.environ.items() if k != cpu_kernels.ONEDNN_VARIABLE}
    if onednn_variable is not None:
        env[cpu_kernels.ONEDNN_VARIABLE] = onednn_variable
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=True)
    return done.stdout.strip().splitlines()[-1]


def test_importing_pretrain_first_runs_onednn_kernels_unless_turned_off():
    assert run_probe(None) == "True ['_MklMatMul']"
    assert run_probe("0") == "False ['MatMul']"


def test_default_respects_an_explicit_choice_and_a_loaded_tensorflow(monkeypatch):
    monkeypatch.setenv(cpu_kernels.ONEDNN_VARIABLE, "0")
    assert not cpu_kernels.default_to_onednn()
    assert os.environ[cpu_kernels.ONEDNN_VARIABLE] == "0"
    monkeypatch.delenv(cpu_kernels.ONEDNN_VARIABLE)
    monkeypatch.setitem(sys.modules, "tensorflow", sys.modules.get("tensorflow", object()))
    assert not cpu_kernels.default_to_onednn()  # too late: TF already chose its kernels
    assert cpu_kernels.ONEDNN_VARIABLE not in os.environ
    monkeypatch.delitem(sys.modules, "tensorflow")
    assert cpu_kernels.default_to_onednn()
    assert os.environ[cpu_kernels.ONEDNN_VARIABLE] == "1"
