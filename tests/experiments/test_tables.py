"""experiments.tables: the README's and docs' result tables rendered from the rows' numbers
(experiments/measured/*.json), every marked table equal to its rendering, and the numbers
written by from_scratch_table and continued_table from a RUNS folder (or a sweep) render as
those tables render the folder."""
import json
import re
import shutil

from tests.experiments.test_continued_table import write_row, write_sweep
from tests.experiments.test_from_scratch_table import PRETRAINED, RANDOM_INIT, write_comparison
from tests.finetune.test_comparison_report import cells
from tests.testutil.cli_runs import REPO_ROOT, run_main_in_process
from experiments import continued_table, from_scratch_table, tables

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


# Each marked table's lines: header, rule and its rows.
COMMITTED_LINES = {"results": 11, "from_scratch": 8,
                   "continued_sweep_lcqmc_first_build": 6, "continued_sweep_lcqmc": 9,
                   "continued_sweep_lcqmc_train40000": 6, "continued_sweep_chnsenticorp": 5,
                   "continued_sweep_msra": 5, "continued_lcqmc": 3,
                   "continued_lcqmc_train40000": 4, "continued_chnsenticorp": 3,
                   "continued_msra": 3, "continued_albert": 5, "arms_chnsenticorp": 10}


def test_the_committed_tables_are_their_rendering_of_the_committed_numbers():
    for name, (relative, render) in tables.TABLES.items():
        path = REPO_ROOT / relative
        committed = tables.marked_table(path.read_text(encoding="utf-8"), name, str(path))
        assert committed == render(tables.MEASURED_DIR), name
        assert committed.count("\n") + 1 == COMMITTED_LINES[name], name
    # every marked table is held here, and every measured file is some table's numbers
    marked = {name for relative in ("README.md", "docs/experiments.md") for name in re.findall(
        r"<!-- table:(\w+) -->", (REPO_ROOT / relative).read_text(encoding="utf-8"))}
    assert marked == set(tables.TABLES) == set(COMMITTED_LINES)
    assert sorted(path.name for path in (REPO_ROOT / "experiments" / "measured").iterdir()) == \
        sorted(["from_scratch.json", "readme.json"] + [f"{name}.json" for name in
                                                       (*tables.CONTINUED, *(f"arms_{task}" for task in tables.ARMS_TASKS))])


def test_the_docs_continued_tables_read_as_the_docs_give_them():
    lcqmc = tables.TABLES["continued_lcqmc"][1](tables.MEASURED_DIR).split("\n")
    assert "fine-tuned on" not in lcqmc[0] and cells(lcqmc[2]) == [
        "lcqmc", "roberta: bert L4 H256 V21128", "12.8 → 15.0", "13.6 → 11.9", "accuracy",
        "52.23 ± 1.04 / 58.11 ± 1.04", "52.69 ± 0.54 / 59.17 ± 0.61", "+1.05 [+0.50, +1.60]",
        "**better**", "50.23 ± 0.71 / 56.33 ± 0.85", "1, 2, 3"]
    budgets = tables.TABLES["continued_lcqmc_train40000"][1](tables.MEASURED_DIR).split("\n")
    assert [cells(line)[5] for line in budgets[2:]] == ["40,000 × 1 ep."] * 2
    msra = tables.TABLES["continued_sweep_msra"][1](tables.MEASURED_DIR).split("\n")
    assert cells(msra[0])[3] == "f1 dev / test" and "Largest Δ" not in "\n".join(msra)
    assert cells(msra[4])[4:] == ["+2.15 [+1.38, +2.98]", "**better**"]


def test_write_replaces_the_marked_tables_and_refuses_a_file_without_markers(tmp_path):
    shutil.copytree(tables.MEASURED_DIR, tmp_path / "results")  # the continued tables' numbers
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


def test_continued_tables_summary_files_render_as_the_runs_folder_and_the_sweep_do(tmp_path):
    runs, results = tmp_path / "runs", tmp_path / "results"
    write_row(runs, "lcqmc", "roberta")
    write_row(runs, "lcqmc", "roberta", comparison_name="compare_train40000", examples=40000,
               verdict="no evidence", low=-0.02)
    write_row(runs, "msra", "albert", verdict="no evidence", low=-0.01)
    write_sweep(runs / "lcqmc" / "roberta" / "sweep", [
        ("lr 1e-4, 500 steps", "p1", 0.008, 0.003, "better", 0.127, 0.147),
        ("lr 2e-5, 500 steps", "p2", 0.001, -0.004, "no evidence", 0.127, 0.13)])
    for args, name in (([f"--runs_dir={runs}"], "continued_lcqmc_train40000"),
                       ([f"--sweep_dir={runs}/lcqmc/roberta/sweep"], "continued_sweep_lcqmc")):
        code, out, err, _ = run_main_in_process(
            "experiments.continued_table", args + [f"--summary_file={results}/{name}.json"],
            tmp_path)
        assert code == 0, err
        assert f"wrote {results}/{name}.json" in out
    rows = continued_table.collect_rows(str(runs))
    rendered = tables.TABLES["continued_lcqmc_train40000"][1](str(results))
    assert rendered == continued_table.markdown_table(rows)
    assert [cells(line)[:2] + cells(line)[5:6] + cells(line)[8:10]
            for line in rendered.split("\n")[2:]] == [
        ["lcqmc", "roberta: bert L4 H256 V21128", "16,000 × 1 ep.", "+3.00 [+1.00, +5.00]",
         "**better**"],
        ["lcqmc", "roberta: bert L4 H256 V21128", "40,000 × 1 ep.", "+3.00 [-2.00, +5.00]",
         "no evidence"],
        ["msra", "albert: bert L4 H256 V21128", "16,000 × 1 ep.", "+3.00 [-1.00, +5.00]",
         "no evidence"]]
    # the same numbers as a table of one budget: the column left out, the rest as it was
    (results / "continued_lcqmc.json").write_text(
        (results / "continued_lcqmc_train40000.json").read_text(encoding="utf-8"),
        encoding="utf-8")
    one_budget = tables.TABLES["continued_lcqmc"][1](str(results)).split("\n")
    assert [cells(line) for line in one_budget] == [
        cells(line)[:5] + cells(line)[6:] for line in rendered.split("\n")]
    sweep = continued_table.read_sweep(str(runs / "lcqmc" / "roberta" / "sweep"))
    rendered = tables.TABLES["continued_sweep_lcqmc"][1](str(results))
    assert rendered == continued_table.sweep_markdown_table(sweep)
    assert continued_table.sweep_table(json.loads(
        (results / "continued_sweep_lcqmc.json").read_text(encoding="utf-8"))) == \
        continued_table.sweep_table(sweep)
    assert [cells(line)[0] + " " + cells(line)[4] for line in rendered.split("\n")[2:]] == [
        "general (not continued) ", "lr 2e-5, 500 steps +0.10 [-0.40, +0.60]",
        "lr 1e-4, 500 steps +0.80 [+0.30, +1.30]"]
