"""Shared pytest fixtures: repository paths and the optional ../shared data; the test tiers
(slow, live) and the tests that need tf.estimator (needs_estimator), which are skipped on the
TensorFlow 2.21 runtime; in_one_runtime for tests that do not depend on the runtime."""
import importlib.util
import os
import pathlib
import sys

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
NEWEST_RUNTIME = REPO_ROOT / ".venv-tf2.21"


def in_one_runtime(why):
    """A skipif marker for what does not depend on the runtime: it runs in the newest
    runtime's environment when that is built (make test runs the suite in both), else here."""
    return pytest.mark.skipif(
        (NEWEST_RUNTIME / ".installed").is_file()
        and not pathlib.Path(sys.prefix).samefile(NEWEST_RUNTIME),
        reason=f"{why}: tested once, in {NEWEST_RUNTIME.name}, which make test also runs")


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
    "test_exact_resume.py",
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
    "test_native_instances.py",
    "test_native_jieba.py",
    "test_native_tokenize.py",
    "test_plateau_checkpoint.py",
    "test_resume.py",
    "test_run_finetune.py",
    "test_run_pretraining.py",
    "test_script_defaults.py",
    "test_span_boundary.py",
    "test_strategies.py",
    "test_tpu_path.py",
    "test_train_time_masking.py",
    "test_training_numerics.py",
    "test_xla.py",
    "test_xlnet_beam.py",
    "test_xlnet_finetune.py",
    "test_xlnet_learns.py",
    "test_xlnet_run_pretraining.py",
    "test_xlnet_spm_finetune.py",
    "test_wheel.py",
}


# needs_estimator: the tests that still run tf.estimator / TPUEstimator, which TensorFlow 2.15
# (.venv, Python 3.11) has and 2.16+ (.venv-tf2.21) does not. This set is the one list of
# them: a file name marks the whole file, which on a runtime without the Estimator is not even
# imported (its imports reach tf.estimator) and shows as one skipped test; "file::test" marks
# one test (all its parametrized cases; "file::test[case]" one case). A test file may also set
# `pytestmark = pytest.mark.needs_estimator`, or a test carry the marker, if the file imports
# without the Estimator. Shrink it as tests move to the toolkit's own training loop:
# `pytest --run-needs-estimator` runs the listed tests anyway, to see which pass without it.
NEEDS_ESTIMATOR = {
    # TPUEstimator: the TPU strategy's run config, model_fn plumbing and flag checks
    "test_tpu_path.py::test_cli_tpu_choice_builds_tpu_estimator_on_the_named_tpu",
    "test_tpu_path.py::test_cli_tpu_without_a_tpu_name_is_refused",
    "test_tpu_path.py::test_tpu_names_that_do_not_resolve_are_refused_by_flag",
    "test_strategies.py::test_tpu_refuses_local_paths",
    "test_strategies.py::test_tpu_run_config_and_estimator_spec_plumbing_on_cpu_in_bf16",
    "test_xlnet_run_pretraining.py::test_tpu_estimator_plumbing_on_cpu_in_bf16",
}
ESTIMATOR_REASON = ("tf.estimator is not in TensorFlow >= 2.16; this test runs on the TensorFlow "
                    "2.15 runtime (.venv, Python 3.11) until it moves off the Estimator")


def estimator_available():
    """True where tf.estimator exists: TensorFlow <= 2.15 with its tensorflow-estimator."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    major, minor = (int(part) for part in tf.__version__.split(".")[:2])
    return (major, minor) < (2, 16) and importlib.util.find_spec("tensorflow_estimator") is not None


HAS_ESTIMATOR = estimator_available()


def needs_estimator(item):
    """True when `item` is in NEEDS_ESTIMATOR or carries the needs_estimator marker."""
    name = item.path.name
    test = f"{name}::{item.name}"
    return (name in NEEDS_ESTIMATOR or test in NEEDS_ESTIMATOR
            or f"{name}::{getattr(item, 'originalname', item.name)}" in NEEDS_ESTIMATOR
            or item.get_closest_marker("needs_estimator") is not None)


class EstimatorOnlyFile(pytest.File):
    """A file of NEEDS_ESTIMATOR on a TensorFlow without the Estimator: left unimported,
    collected as one test that the needs_estimator marker skips."""

    def collect(self):
        yield NotImportedTests.from_parent(self, name=self.path.name)


class NotImportedTests(pytest.Item):
    def runtest(self):
        raise AssertionError(f"{self.path.name} needs tf.estimator and was not imported")

    def reportinfo(self):
        return self.path, 0, f"{self.path.name} (not imported: it needs tf.estimator)"


def pytest_addoption(parser):
    parser.addoption("--run-needs-estimator", action="store_true",
                     help="run the NEEDS_ESTIMATOR tests even where TensorFlow has no tf.estimator")


def _skipping_estimator_tests(config):
    return not HAS_ESTIMATOR and not config.getoption("--run-needs-estimator")


def pytest_pycollect_makemodule(module_path, parent):
    if _skipping_estimator_tests(parent.config) and module_path.name in NEEDS_ESTIMATOR:
        return EstimatorOnlyFile.from_parent(parent, path=module_path)
    return None


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: trains or starts tools; skipped by make test-fast")
    config.addinivalue_line("markers", "live: runs transformers/torch; skipped by make test-fast")
    config.addinivalue_line("markers", "needs_estimator: runs tf.estimator (TensorFlow <= 2.15); "
                                       "skipped on the TensorFlow 2.21 runtime")


# The files that take longest (seconds, 2 cores, either runtime), run first: `make test`
# hands files to its 2 workers in collection order (--dist loadfile), and one of these
# started last would leave the other worker idle for most of a minute at the end.
LONGEST_FIRST = (
    "test_model_options.py", "test_wheel.py", "test_strategies.py", "test_collectives.py",
    "test_run_pretraining.py", "test_electra_run_pretraining.py",
    "test_lcqmc_experiment_script.py", "test_training_loop.py", "test_cli_failures.py",
    "test_cli_help.py", "test_cross_runtime_checkpoints.py", "test_run_finetune.py",
    "test_resume.py", "test_exact_resume.py", "test_plateau_checkpoint.py",
    "test_finetune_resume.py", "test_xla.py", "test_compare.py")


# Tests whose outcome does not depend on the TensorFlow runtime, run in one of the two
# (in_one_runtime): data_gen (plain Python and C; its C modules are tested under both
# interpreters in data_gen/native/, and test_cross_runtime_bytes holds both runtimes' files
# byte-identical) and the experiments layer's dry runs and tables.
ONE_RUNTIME_DIRS = ("data_gen", "experiments")
BOTH_RUNTIMES = ("native", "test_cross_runtime_bytes.py")
ONE_RUNTIME = in_one_runtime("data_gen and the experiments' dry runs do not depend on "
                             "TensorFlow's version")


def _runs_in_one_runtime(item):
    parts = item.path.relative_to(REPO_ROOT / "tests").parts
    return parts[0] in ONE_RUNTIME_DIRS and not set(parts) & set(BOTH_RUNTIMES)


def pytest_collection_modifyitems(config, items):
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable otherwise
    for item in items:
        if _runs_in_one_runtime(item):
            item.add_marker(ONE_RUNTIME)
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if "_live" in item.path.name or item.name.startswith("test_live_"):
            item.add_marker(pytest.mark.live)
        if needs_estimator(item):
            item.add_marker(pytest.mark.needs_estimator)
            if _skipping_estimator_tests(config):
                item.add_marker(pytest.mark.skip(reason=ESTIMATOR_REASON))
