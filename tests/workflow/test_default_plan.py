"""Every job of the default configuration can be planned on its dataset's real size.

`snakemake --cores all` once failed after 54 minutes on a RaCO-DP job whose single step already
exceeded its epsilon on a small stand-in. Here each dataset of the default config is prepared
as the workflow prepares it (row caps, split seed, stand-ins where the data is absent) and every
job goes through :func:`dpminimax.feasibility.plan_job` on that data: the privacy planning
``fit`` starts with (``plan_runs``), so the plan check the workflow runs when it builds the DAG
(the same plans on the prepared data's ``n_train``) passes on a rerun too.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import yaml

from dpminimax.algorithms import expand_runs, get_method
from dpminimax.data import load_dataset
from dpminimax.experiments import expand_jobs, load_experiments
from dpminimax.feasibility import plan_job
from dpminimax.problems import BILEVEL_PROBLEMS, PROBLEMS

ROOT = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((ROOT / "workflow/config/config.yaml").read_text())


def _jobs():
    return [job for paper in CONFIG["papers"]
            for job in expand_jobs(load_experiments(ROOT / f"papers/{paper}/experiments.yaml"),
                                   CONFIG["scale"])]


@functools.cache
def _prepared(name: str):
    data = CONFIG["data"]
    rows = (data.get("dataset_max_rows") or {}).get(name, data["max_rows"])
    return load_dataset(name, max_rows=rows, split_seed=data["split_seed"],
                        missing_data=data.get("missing_data", "standin"))


JOBS = _jobs()


def test_the_default_config_is_the_default_scale():
    assert CONFIG["scale"] == "default"
    assert len(JOBS) > 0


@pytest.mark.parametrize("job", JOBS, ids=lambda j: f"{j.paper}/{j.experiment}/{j.dataset}/"
                                                     f"{j.method}/eps~{j.epsilon}")
def test_every_default_job_plans_on_its_data(job):
    """The DAG's check (dpminimax.feasibility) on the prepared data itself, real or stand-in:
    a stand-in of a dataset whose jobs depend on n has the real training size, so a default run
    without the files plans (and is refused) exactly as one with them."""
    synthetic = job.dataset in PROBLEMS or job.dataset in BILEVEL_PROBLEMS
    data = None if synthetic else _prepared(job.dataset)
    assert plan_job(job, data=data) > 0


def test_preflight_catches_an_infeasible_racodp_job():
    """The failure the users hit: batch 1,024 of a 1,500-row stand-in at epsilon 0.5."""
    data = _prepared("acs-employment")
    runs = expand_runs([0], 0.5, 1e-5, {"batch_size": len(data.y_train) - 10,
                                          "noise_multiplier": 1.0, "histogram_scale": 1.0})
    with pytest.raises(ValueError, match="single step already spends"):
        get_method("racodp").preflight(data, runs)
