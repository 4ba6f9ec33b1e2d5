"""Shared pytest fixtures: repository paths and the optional ../shared data."""
import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Tiny models: TensorFlow's graph optimizer would take longer than their few steps, in this
# process and in the tools the tests start (pretrain.training.strategy).
os.environ.setdefault("ZH_PRETRAIN_GRAPH_OPTIMIZER", "off")

# Before any test module loads TensorFlow, so that the tests run the CPU kernels
# the toolkit's entry points run (oneDNN unless TF_ENABLE_ONEDNN_OPTS=0).
import pretrain  # noqa: E402,F401

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def shared_path(*parts):
    """Path under ../shared/data, or skip the test with the reason if absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not present (a fresh clone has no ../shared); "
                    "this test needs the shared data set")
    return path


@pytest.fixture
def repo_root():
    return REPO_ROOT


def _sessions_without_graph_optimizer():
    """The tests' own tf.Session()s skip grappler as the tools' sessions do under
    ZH_PRETRAIN_GRAPH_OPTIMIZER=off (a session given a config keeps it as given)."""
    from tensorflow.python.client import session as tf_session  # pylint: disable=import-outside-toplevel
    from tensorflow.core.protobuf import config_pb2  # pylint: disable=import-outside-toplevel
    opened = tf_session.Session.__init__

    def open_session(self, target="", graph=None, config=None):
        if config is None:
            config = config_pb2.ConfigProto()
            config.graph_options.rewrite_options.disable_meta_optimizer = True
        opened(self, target, graph, config)

    tf_session.Session.__init__ = open_session


from pretrain.training import strategy  # noqa: E402

if strategy.graph_optimizer_off():
    _sessions_without_graph_optimizer()


# Test tiers. `make test` (CI) runs everything; `make test-fast` skips `slow` and `live`.
# slow: the files that took 8 s or more of the suite's time (setup, calls and teardown;
# measured with --durations=0 on 2 cores, both workers busy): they build and train Estimators
# or start tools as processes. live: needs torch and transformers (skipped without them).
SLOW_FILES = {
    "test_beam_dask.py",
    "test_beam_pipeline.py",
    "test_checkpoint_loading.py",
    "test_cli_failures.py",
    "test_cli_help.py",
    "test_collectives.py",
    "test_compare.py",
    "test_conditional_finetune.py",
    "test_continued_eval.py",
    "test_cpu_kernels.py",
    "test_create_pretraining_data.py",
    "test_electra_finetune.py",
    "test_electra_run_pretraining.py",
    "test_export_finetuned.py",
    "test_export_saved_model.py",
    "test_finetune.py",
    "test_finetune_formats.py",
    "test_hf_electra.py",
    "test_hf_import_cases.py",
    "test_hf_interop.py",
    "test_hf_xlnet.py",
    "test_hierarchical_position.py",
    "test_jieba_dictionary_cache.py",
    "test_lcqmc_experiment_script.py",
    "test_masking_recipes.py",
    "test_model_options.py",
    "test_modeling_numerics.py",
    "test_moved_modules.py",
    "test_native_instances.py",
    "test_native_jieba.py",
    "test_native_tokenize.py",
    "test_resume.py",
    "test_run_finetune.py",
    "test_run_pretraining.py",
    "test_script_defaults.py",
    "test_span_boundary.py",
    "test_strategies.py",
    "test_tpu_path.py",
    "test_training_numerics.py",
    "test_xla.py",
    "test_xlnet_beam.py",
    "test_xlnet_finetune.py",
    "test_xlnet_learns.py",
    "test_xlnet_run_pretraining.py",
    "test_xlnet_spm_finetune.py",
    "test_wheel.py",
}


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: trains or starts tools; skipped by make test-fast")
    config.addinivalue_line("markers", "live: runs transformers/torch; skipped by make test-fast")


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if "_live" in item.path.name or item.name.startswith("test_live_"):
            item.add_marker(pytest.mark.live)
