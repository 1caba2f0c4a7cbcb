"""``snakemake -n`` plans every job (issue 40 item 4): an infeasible plan is refused when the DAG
is built, in one line naming the file, the key and the job, not after minutes of other jobs."""

from __future__ import annotations

import json

from wfhelpers import run_snakemake


def _error_line(result):
    lines = [line for line in (result.stdout + result.stderr).splitlines()
             if "cannot be planned" in line]
    assert result.returncode != 0 and len(lines) == 1, result.stderr[-3000:]
    return lines[0]


def test_a_bilevel_penalty_below_lambda_min_fails_the_dry_run(workflow_copy):
    path = workflow_copy / "papers/bilevel/experiments.yaml"
    text = path.read_text()
    old = "params: {n: [1024, 4096, 16384, 65536]}\n      dp_aid:"
    assert old in text
    path.write_text(text.replace(old, "params: {n: [1024, 4096, 16384, 65536], lam: 1.0}\n"
                                      "      dp_aid:"))
    result = run_snakemake(workflow_copy, "-n", "--config", "experiments={bilevel: [e3_rates]}")
    line = _error_line(result)
    assert "experiments.e3_rates.methods.dp_bilevel: job pa_linear_response/dp_bilevel/" in line
    assert "lam = 1 is below the smallest penalty the lemmas allow (A5): 4" in line


def test_an_override_onto_a_small_prepared_dataset_fails_the_dry_run(workflow_copy):
    """RaCO-DP's Fig. 4 settings on German credit's 750 training rows (its meta.json, as
    prepare_data writes it): one step spends more than epsilon 0.5."""
    meta = workflow_copy / "results/data/german-credit/meta.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"meta": {"n_train": 750,
                                         "split": {"max_rows": None, "seed": 100}}}))
    result = run_snakemake(workflow_copy, "-n", "--config", "experiments={racodp: [fig4_dp]}",
                           "dataset_override=[german-credit]")
    line = _error_line(result)
    assert "experiments.fig4_dp.methods.racodp: job german-credit/racodp/eps~0.5 " in line
    assert "a single step already spends epsilon 0.6658 > target 0.5" in line
