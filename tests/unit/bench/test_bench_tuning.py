"""The tuning-protocol benchmark runs the workflow's tuned Fig. 4 jobs, end to end or estimated."""

from __future__ import annotations

import pytest

from dpminimax.bench.racodp import run_tuning_benchmark, tuning_jobs
from dpminimax.data import DatasetNotFoundError, load_dataset


def test_paper_scale_jobs_are_fig4_on_adult_and_credit_card():
    jobs = tuning_jobs(configs=40)
    assert sorted((job.dataset, str(job.epsilon)) for job in jobs) == sorted(
        (name, eps) for name in ("adult", "credit-card") for eps in ("0.5", "1", "3", "9"))
    for job in jobs:
        assert job.tuning["configs"] == 40 and job.tuning["seeds"] == 5
        assert len(job.seeds) == 20 and job.tuning["cell"] == ["gamma"]
        assert len(job.params["gamma"]) == 6


@pytest.mark.parametrize("mode", ["full", "estimate"])
def test_smoke_scale_benchmark_times_every_phase(mode):
    try:
        load_dataset("adult")
    except DatasetNotFoundError as err:
        pytest.skip(f"adult not on the search path: {err}")
    result = run_tuning_benchmark(mode, configs=2, datasets=["adult"], steps=3, scale="smoke")
    [row] = result["jobs"]
    assert row["job"] == "adult/eps~1"
    phases = (["phase1_s", "select_s", "phase2_s"] if mode == "full"
              else ["phase1_s", "phase2_pessimistic_s"])
    assert all(row[phase] > 0 for phase in phases)
    assert row["minutes"] == pytest.approx(sum(row[phase] for phase in phases) / 60.0)
    assert result["met"] == (result["total_minutes"] <= 60.0)


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="mode must be"):
        run_tuning_benchmark("guess")
