"""experiments.tables: the README's and docs' result tables rendered from the rows' numbers
(experiments/measured/*.json), the committed tables equal to their rendering, and the numbers
written by from_scratch_table from a RUNS folder render as that table renders the folder."""
import json
import shutil

from tests.experiments.test_from_scratch_table import PRETRAINED, RANDOM_INIT, write_comparison
from tests.testutil.cli_runs import REPO_ROOT, run_main_in_process
from experiments import from_scratch_table, tables

ROW = {"recipe": "span", "model": "bert L4 H256 V21128", "seeds": [1, 2, 3], "split": "test",
       "pretraining": {"masked_lm_loss": 5.5, "masked_lm_accuracy": 0.141,
                       "masked_lm_unigram_accuracy": 0.045, "span_boundary_loss": 5.58},
       "pretraining_flops": 1.23e14,
       "random_init": {"dev": {"accuracy": {"mean": 0.5, "std": 0.01}},
                       "test": {"accuracy": {"mean": 0.55, "std": 0.02}}, "collapsed_seeds": []},
       "pretrained": {"dev": {"accuracy": {"mean": 0.54, "std": 0.003}},
                      "test": {"accuracy": {"mean": 0.6, "std": 0.005}}, "collapsed_seeds": [2]},
       "difference": {"difference": 0.0414, "low": 0.0346, "high": 0.049, "confidence": 0.95,
                      "verdict": "better"}}
README_ROWS = {"rows": [
    {"row": "from scratch, spans", "recipe": "span", "caveat": "a caveat"},
    {"row": "parity", "difference": -0.0038, "low": -0.013, "high": 0.005,
     "verdict": "in parity", "caveat": "same batches"}]}


def _results(folder, rows=(ROW,), readme=None):
    folder.mkdir(exist_ok=True)
    (folder / "from_scratch.json").write_text(json.dumps(list(rows)), encoding="utf-8")
    (folder / "readme.json").write_text(json.dumps(readme or README_ROWS), encoding="utf-8")
    return str(folder)


def test_the_readme_table_takes_a_from_scratch_rows_numbers_by_recipe(tmp_path):
    assert tables.readme_table(_results(tmp_path)).split("\n") == [
        "| row | Δ [95% CI] | verdict | caveat |", "|---|---:|---|---|",
        "| from scratch, spans | +4.14 [+3.46, +4.90] | **better** | a caveat |",
        "| parity | −0.38 [−1.30, +0.50] | in parity | same batches |"]
    # a from-scratch row without a standing verdict says "none" here (the docs say why)
    no_verdict = dict(ROW, difference=dict(ROW["difference"], verdict="no verdict: at chance"))
    assert "| +4.14 [+3.46, +4.90] | none | a caveat |" in tables.readme_table(
        _results(tmp_path, [no_verdict]))


def test_the_docs_table_is_from_scratch_tables_own_rendering(tmp_path):
    lines = tables.from_scratch_rows_table(_results(tmp_path)).split("\n")
    assert lines[0].startswith("| recipe | model | pretraining eval |")
    assert lines[2] == (
        "| SpanBERT: spans + SBO | bert L4 H256 V21128 | MLM loss 5.50, MLM acc 14.1%, "
        "unigram 4.5%, SBO loss 5.58 | 50.00 ± 1.00 / 55.00 ± 2.00 | 54.00 ± 0.30 / "
        "60.00 ± 0.50 collapsed (seed 2) | +4.14 [+3.46, +4.90] | **better** | 1, 2, 3 | 123 |")


def test_the_committed_tables_are_their_rendering_of_the_committed_numbers():
    for name, (relative, render) in tables.TABLES.items():
        path = REPO_ROOT / relative
        committed = tables.marked_table(path.read_text(encoding="utf-8"), name, str(path))
        assert committed == render(tables.MEASURED_DIR), name
        assert committed.count("\n") >= 7  # header, rule and the six or nine rows


def test_write_replaces_the_marked_tables_and_refuses_a_file_without_markers(tmp_path):
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO_ROOT / "docs" / "experiments.md", tmp_path / "docs" / "experiments.md")
    (tmp_path / "README.md").write_text("# x\n\n<!-- table:results -->\n| stale |\n"
                                        "<!-- /table:results -->\n\nafter\n", encoding="utf-8")
    results = _results(tmp_path / "results")
    code, out, err, _ = run_main_in_process(
        "experiments.tables", ["--write", f"--measured_dir={results}", f"--repo_dir={tmp_path}"],
        tmp_path)
    assert code == 0, err
    assert "wrote the results table of" in out
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == (
        "# x\n\n<!-- table:results -->\n" + tables.readme_table(results)
        + "\n<!-- /table:results -->\n\nafter\n")
    docs = (tmp_path / "docs" / "experiments.md").read_text(encoding="utf-8")
    assert tables.marked_table(docs, "from_scratch", "docs") == tables.from_scratch_rows_table(
        results)
    (tmp_path / "README.md").write_text("# no markers\n", encoding="utf-8")
    code, _, err, _ = run_main_in_process(
        "experiments.tables", ["--write", f"--measured_dir={results}", f"--repo_dir={tmp_path}"],
        tmp_path)
    assert code == 2 and "README.md: expected one <!-- table:results -->" in err
    assert "Traceback" not in err


def test_a_readme_row_naming_an_unknown_recipe_is_refused(tmp_path):
    results = _results(tmp_path, readme={"rows": [{"row": "r", "recipe": "gpt", "caveat": ""}]})
    code, _, err, _ = run_main_in_process("experiments.tables", [f"--measured_dir={results}"],
                                          tmp_path)
    assert code == 2 and "names recipe 'gpt', which from_scratch.json does not hold" in err


def test_the_summary_file_renders_as_the_runs_folder_does(tmp_path):
    folder = tmp_path / "runs"
    write_comparison(folder / "roberta", "roberta", [1, 2, 3], RANDOM_INIT, PRETRAINED)
    write_comparison(folder / "custom", "custom", [7], [(0.6, 25)], [(0.625, 26)])
    summary = tmp_path / "results" / "from_scratch.json"
    code, _, err, _ = run_main_in_process(
        "experiments.from_scratch_table", [f"--runs_dir={folder}", f"--summary_file={summary}"],
        tmp_path)
    assert code == 0, err
    _results(tmp_path / "results", rows=json.loads(summary.read_text(encoding="utf-8")))
    rendered = tables.from_scratch_rows_table(str(tmp_path / "results"))
    assert rendered == from_scratch_table.markdown_table(from_scratch_table.collect_rows(
        str(folder)))
    assert [line.split(" | ")[0] for line in rendered.split("\n")[2:]] == [
        "| RoBERTa: whole-word masking", "| custom"]
