"""Shared pytest fixtures: repository paths and the optional ../shared data; the test tiers
(slow, live) and the tests that need tf.estimator (needs_estimator), which are skipped on the
TensorFlow 2.21 runtime."""
import importlib.util
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


# needs_estimator: the tests that still run tf.estimator / TPUEstimator, which TensorFlow 2.15
# (.venv, Python 3.11) has and 2.16+ (.venv-tf2.21) does not. This set is the one list of
# them: a file name marks the whole file, which on a runtime without the Estimator is not even
# imported (its imports reach tf.estimator) and shows as one skipped test; "file::test" marks
# one test (all its parametrized cases; "file::test[case]" one case). A test file may also set
# `pytestmark = pytest.mark.needs_estimator`, or a test carry the marker, if the file imports
# without the Estimator. Shrink it as tests move to the toolkit's own training loop.
NEEDS_ESTIMATOR = {
    # fine-tuning: finetune.run_finetune (best_checkpoint's CheckpointSaverListener) and what
    # imports it, compare and run_lcqmc included
    "test_collapse.py",
    "test_compare.py",
    "test_conditional_finetune.py",
    "test_continued_table.py",
    "test_finetune.py",
    "test_run_finetune.py",
    "test_electra_finetune.py",
    "test_hierarchical_position.py",
    "test_xlnet_finetune.py",
    "test_xlnet_spm_finetune.py",
    "test_finetune_script.py",
    "test_script_defaults.py",
    "test_cli_help.py::test_help_lists_the_tools_flags_and_exits_0[zh-finetune]",
    "test_cli_help.py::test_help_lists_the_tools_flags_and_exits_0[zh-compare]",
    "test_cli_help.py::test_help_lists_the_tools_flags_and_exits_0[zh-run-lcqmc]",
    "test_cli_help.py::test_help_lists_the_tools_flags_and_exits_0[zh-compare-lcqmc]",
    "test_cli_help.py::test_help_lists_the_tools_flags_and_exits_0[python -m finetune.run_finetune]",
    "test_cli_help.py::test_help_lists_the_tools_flags_and_exits_0[python -m finetune.compare]",
    "test_cli_help.py::test_help_lists_the_tools_flags_and_exits_0[python -m finetune.run_lcqmc]",
    "test_cli_help.py::test_the_readmes_commands_use_flags_their_tools_know",
    "test_lcqmc_experiment_script.py::test_span_row_runs_end_to_end_and_lands_in_the_table",
    # pretraining: run_pretraining's Estimator, TPUEstimator, strategy.make_run_config's RunConfig
    "test_resume.py",
    "test_xla.py",
    "test_collectives.py::test_strategy_reaches_the_single_device_weights",
    "test_collectives.py::test_non_finite_micro_batch_on_one_replica_skips_the_whole_update",
    "test_collectives.py::test_traffic_counter_sees_a_copy_between_devices",
    "test_collectives.py::test_one_gradient_sized_reduce_per_update_and_no_broadcast",
    "test_collectives.py::test_family_update_is_one_reduce_and_reaches_the_single_device_weights",
    "test_continued_eval.py::test_the_start_is_scored_on_the_same_batches_beside_the_end",
    "test_continued_eval.py::test_eval_records_that_are_training_records_are_named",
    "test_continued_eval.py::test_an_extra_eval_matching_no_file_or_without_do_eval_stops_before_training",
    "test_continued_eval.py::test_electras_eval_draws_are_the_same_for_the_start_and_the_end",
    "test_learning_check.py::test_pretraining_eval_reports_the_baseline_and_warns_only_before_learning",
    "test_run_pretraining.py::test_overfits_fixed_batch_and_writes_summaries_and_eval",
    "test_run_pretraining.py::test_evaluating_an_init_checkpoint_alone_scores_its_weights",
    "test_run_pretraining.py::test_mixed_precision_and_accumulation_train",
    "test_run_pretraining.py::test_roberta_data_turns_the_sentence_head_off",
    "test_run_pretraining.py::test_resumes_from_checkpoint_with_old_slot_names",
    "test_run_pretraining.py::test_ignore_invalid_weights_keeps_initial_values_of_mismatched_variables",
    "test_run_pretraining.py::test_hierarchical_positions_train_past_max_position_embeddings",
    "test_run_pretraining.py::test_vocab_and_config_are_written_beside_the_checkpoints",
    "test_run_pretraining.py::test_without_a_usable_vocab_a_warning_says_why",
    "test_strategies.py::test_tpu_run_config_and_estimator_spec_plumbing_on_cpu_in_bf16",
    "test_strategies.py::test_mirrored_two_logical_cpus_matches_single_device",
    "test_strategies.py::test_multi_worker_two_local_processes",
    "test_strategies.py::test_graph_optimizer_switch_reaches_the_session_config",
    "test_tpu_path.py::test_tpu_model_fn_scaffold_restores_checkpoint_and_trains_like_one_device",
    "test_tpu_path.py::test_tpu_model_fn_builds_inside_tensorflows_tpu_shard",
    "test_tpu_path.py::test_cli_tpu_choice_builds_tpu_estimator_on_the_named_tpu",
    "test_training_numerics.py::test_fp16_bert_logs_the_fp32_grad_norm",
    # the model families' run_pretraining and TPU tests
    "test_electra_run_pretraining.py::test_trains_and_reports_upstreams_metrics_under_upstreams_names",
    "test_electra_run_pretraining.py::test_mixed_precision_and_accumulation_train_both_networks",
    "test_electra_run_pretraining.py::test_continues_from_an_upstream_checkpoint_without_its_optimizer_state",
    "test_electra_run_pretraining.py::test_resume_restores_both_networks_and_their_adam_slots",
    "test_xlnet_run_pretraining.py::test_the_permutation_lm_trains_and_is_reported_beside_its_baseline",
    "test_xlnet_run_pretraining.py::test_mixed_precision_accumulation_and_resume",
    "test_xlnet_run_pretraining.py::test_tpu_estimator_plumbing_on_cpu_in_bf16",
    "test_xlnet_run_pretraining.py::test_sentencepiece_data_leaves_its_model_beside_the_checkpoints",
    "test_span_boundary.py::test_sbo_loss_falls_on_toy_corpus_and_is_reported",
    "test_span_boundary.py::test_checkpoints_with_and_without_the_head_load_both_ways",
    "test_span_boundary.py::test_export_hf_leaves_the_head_out_and_says_so",
    "test_span_boundary.py::test_tpu_model_fn_builds_inside_tensorflows_tpu_shard",
    "test_toy_family.py::test_a_toy_family_trains_evaluates_and_exports_through_the_same_commands",
    "test_hf_electra.py::test_the_imported_pair_continues_pretraining_from_every_tensor",
    "test_hf_interop.py::test_imported_checkpoint_initialises_pretraining_and_finetuning",
    # the tools' error lines: one module fixture runs run_pretraining and run_lcqmc
    "test_cli_failures.py::test_expected_failure_is_one_error_line",
    "test_cli_failures.py::test_truncated_record_message_names_the_flag_and_the_skip_counts",
    "test_cli_failures.py::test_full_disk_names_the_output_and_leaves_nothing",
    "test_cli_failures.py::test_nan_stop_and_bad_inputs_write_no_data_output",
    # SavedModel exports compared with an Estimator's predictions
    "test_export_saved_model.py::test_bert_export_equals_estimator",
    "test_export_saved_model.py::test_google_albert_export_equals_estimator",
    "test_export_saved_model.py::test_classifier_export_returns_the_estimators_probabilities",
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


def pytest_pycollect_makemodule(module_path, parent):
    if not HAS_ESTIMATOR and module_path.name in NEEDS_ESTIMATOR:
        return EstimatorOnlyFile.from_parent(parent, path=module_path)
    return None


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: trains or starts tools; skipped by make test-fast")
    config.addinivalue_line("markers", "live: runs transformers/torch; skipped by make test-fast")
    config.addinivalue_line("markers", "needs_estimator: runs tf.estimator (TensorFlow <= 2.15); "
                                       "skipped on the TensorFlow 2.21 runtime")


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if "_live" in item.path.name or item.name.startswith("test_live_"):
            item.add_marker(pytest.mark.live)
        if needs_estimator(item):
            item.add_marker(pytest.mark.needs_estimator)
            if not HAS_ESTIMATOR:
                item.add_marker(pytest.mark.skip(reason=ESTIMATOR_REASON))
