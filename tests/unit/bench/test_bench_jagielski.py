"""The Jagielski et al. benchmark times exactly the workflow's jagielski2019 jobs."""

from __future__ import annotations

import pytest

from dpminimax.bench.dpfermi import jagielski_jobs, job_label, run_jagielski_benchmark
from dpminimax.data import DatasetNotFoundError, load_dataset


def test_paper_scale_jobs_are_figs_4_and_9():
    jobs = jagielski_jobs()
    assert sorted((job.experiment, str(job.epsilon)) for job in jobs) == sorted(
        (experiment, eps) for experiment in ("fig4_credit_eo", "fig9_adult_eo")
        for eps in ("0.5", "1", "3"))
    for job in jobs:
        assert len(job.seeds) == 15 and job.params["rounds"] == 50
        assert job.params["tolerance"] == [0.0, 0.02, 0.05, 0.1, 0.2]


def test_smoke_scale_benchmark_times_every_job():
    for name in ("adult", "credit-card"):
        try:
            load_dataset(name)
        except DatasetNotFoundError as err:
            pytest.skip(f"{name} not on the search path: {err}")
    result = run_jagielski_benchmark(scale="smoke")
    assert [row["job"] for row in result["jobs"]] == [
        job_label(job) for job in jagielski_jobs(scale="smoke")]
    assert result["jobs"][0]["job"] == "fig9_adult_eo/adult/eps~1"
    assert all(row["runs"] == 5 and row["seconds"] > 0 for row in result["jobs"])
    assert result["skipped"] == [] and result["total_minutes"] == pytest.approx(
        sum(row["seconds"] for row in result["jobs"]) / 60.0)
