"""Every job's privacy plan runs when the workflow builds its DAG (issue 40 item 4): the four
run-time failures the issue found are refused in one line naming the file, the key and the job,
and planned jobs are remembered per training code."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from dpminimax.epsilon import Epsilon
from dpminimax.experiments import ExperimentConfigError, Job, expand_jobs, load_experiments
from dpminimax.feasibility import check_jobs, prepared_train_size

ROOT = Path(__file__).resolve().parents[2]

#: RaCO-DP's Fig. 4 settings (papers/racodp/experiments.yaml, fig4_dp) at one gamma.
FIG4 = {"gamma": 0.05, "noise_multiplier": 6.0, "histogram_scale": 10.0, "clip": 3.0,
        "lr": 0.5, "lr_dual": 0.5, "temperature": 2.0, "batch_size": 1024}


def _job(method, dataset, params, epsilon="0.5", tuning=None):
    return Job("racodp", "fig4_dp", dataset, method, Epsilon.parse(epsilon), 1e-5, (0, 1, 2),
               params, tuning=tuning)


def _check(jobs, tmp_path, sizes=None, code="code-a"):
    return check_jobs(jobs, (sizes or {}).get, tmp_path / "plans.json", code,
                      lambda job: f"papers/{job.paper}/experiments.yaml")


def test_a_small_dataset_under_racodp_fig4_settings_is_refused_naming_the_job(tmp_path):
    """German credit (750 training rows): batch 1,024 samples everything, so one step of
    Fig. 4's noise already spends more than epsilon 0.5."""
    with pytest.raises(ExperimentConfigError) as err:
        _check([_job("racodp", "german-credit", FIG4)], tmp_path, {"german-credit": 750})
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("papers/racodp/experiments.yaml: experiments.fig4_dp.methods."
                              "racodp: job german-credit/racodp/eps~0.5 (n_train 750)")
    assert "a single step already spends epsilon 0.6658 > target 0.5" in message
    # the same job on Adult's size plans
    assert _check([_job("racodp", "adult", FIG4)], tmp_path, {"adult": 33916}) == 1


def test_a_bilevel_penalty_below_lambda_min_is_refused(tmp_path):
    job = Job("bilevel", "e3_rates", "pa_linear_response", "dp_bilevel", Epsilon.parse(2), 1e-5,
              (0,), {"problem": "pa_linear_response", "n": [1024, 4096], "lam": 1.0})
    with pytest.raises(ExperimentConfigError, match=r"experiments\.e3_rates\.methods\.dp_bilevel"
                       r": job pa_linear_response/dp_bilevel/eps~2 cannot be planned: .*lam = 1 "
                       r"is below the smallest penalty the lemmas allow \(A5\): 4"):
        _check([job], tmp_path)


@pytest.mark.parametrize(("paper", "experiment", "method"), [
    ("byoa", "e4_scsc_rates", "dp_sgda"),
    ("dpdro", "table3", "dp_recursive_spider"),
])
def test_clip_inf_on_a_private_method_is_refused_when_jobs_are_expanded(paper, experiment,
                                                                         method):
    """The CLIP check agrees with the plan: a private method's noise needs a finite clip."""
    spec = load_experiments(ROOT / f"papers/{paper}/experiments.yaml")
    spec["experiments"] = {experiment: spec["experiments"][experiment]}
    block = spec["experiments"][experiment]["methods"][method]
    block["params"] = {**block["params"], "clip": math.inf}
    with pytest.raises(ExperimentConfigError,
                       match=rf"experiments\.{experiment}\.methods\.{method}\.params: method "
                             rf"'{method}': parameter 'clip' must be .*finite number > 0.*inf"):
        expand_jobs(spec, "default")


def test_planned_jobs_are_remembered_per_training_code(tmp_path):
    job = _job("racodp", "adult", FIG4)
    assert _check([job], tmp_path, {"adult": 33916}) == 1
    assert _check([job], tmp_path, {"adult": 33916}) == 0          # remembered
    assert _check([job], tmp_path, {"adult": 30000}) == 1          # another size
    assert _check([job], tmp_path, {"adult": 33916}, code="code-b") == 1  # other code
    stored = json.loads((tmp_path / "plans.json").read_text())
    assert stored["code"] == "code-b" and len(stored["planned"]) == 1


def test_unprepared_tuned_and_data_reading_jobs_wait_for_their_start(tmp_path):
    """No size yet, parameters chosen by tuning, or Thm. 3.3's plan from the group counts:
    nothing to plan now (the job plans when it starts)."""
    assert _check([_job("racodp", "german-credit", FIG4)], tmp_path) == 0
    assert _check([_job("racodp", "german-credit", FIG4, tuning={"configs": 2})], tmp_path,
                  {"german-credit": 750}) == 0
    assert _check([_job("dpfermi_paper", "adult", {}, epsilon="1")], tmp_path,
                  {"adult": 33916}) == 0


def test_prepared_train_size_reads_meta_json_only_for_this_split(tmp_path):
    meta = tmp_path / "meta.json"
    assert prepared_train_size(meta, None, 100) is None
    meta.write_text(json.dumps({"meta": {"n_train": 750,
                                         "split": {"max_rows": None, "seed": 100}}}))
    assert prepared_train_size(meta, None, 100) == 750
    assert prepared_train_size(meta, 500, 100) is None   # prepared with another row cap
    assert prepared_train_size(meta, None, 7) is None    # or split seed


def test_every_default_job_passes_the_dag_check(tmp_path):
    """The default config's synthetic-problem jobs all plan (its dataset jobs: see
    tests/workflow/test_default_plan.py, which prepares their data)."""
    config = yaml.safe_load((ROOT / "workflow/config/config.yaml").read_text())
    jobs = [job for paper in config["papers"]
            for job in expand_jobs(load_experiments(ROOT / f"papers/{paper}/experiments.yaml"),
                                   config["scale"])]
    assert _check(jobs, tmp_path) > 100
