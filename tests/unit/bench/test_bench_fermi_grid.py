"""The DP-FERMI tabular-grid benchmark counts the paper-scale work exactly and times a program."""

from __future__ import annotations

import math

import pytest

from dpminimax.bench.dpfermi import (
    grid_work,
    time_floor,
    time_method,
    time_method_side_by_side,
)
from dpminimax.data import DatasetNotFoundError, load_dataset


@pytest.fixture(scope="module")
def n_adult():
    try:
        return len(load_dataset("adult").y_train)
    except DatasetNotFoundError as err:
        pytest.skip(f"Adult not on the search path: {err}")


def test_grid_work_counts_runs_steps_and_batch(n_adult):
    work = grid_work()
    steps = math.ceil(200 / (1024 / n_adult))
    # dpfermi_code: fig2_adult_dp only, 4 epsilons x 15 seeds x 5 lambdas
    assert work["dpfermi_code"] == 4 * 15 * 5 * steps * 1024
    assert "jagielski2019" not in work
    assert set(work) == {"dpfermi_paper", "dpfermi", "dpfermi_code", "dpfermi_nonprivate",
                         "tran2021a", "tran2021b"}


@pytest.mark.parametrize("method", ["dpfermi", "dpfermi_code", "tran2021a", "tran2021b"])
def test_every_method_is_timed_through_its_own_fit(n_adult, method):
    timing = time_method(method, steps=2, warmup=1, runs=3, batch=64)
    assert timing["runs"] == 3 and timing["seconds_per_step"] > 0
    assert timing["steps_timed"] >= math.ceil(n_adult / 64)     # one epoch: per-epoch work too
    assert timing["example_gradients_per_second"] == pytest.approx(
        3 * 64 / timing["seconds_per_step"])


def test_side_by_side_jobs_are_timed_together_and_their_throughputs_summed(n_adult):
    timing = time_method_side_by_side("tran2021a", steps=2, jobs=2, runs=3, batch=64)
    assert timing["jobs"] == 2 and timing["runs"] == 3
    assert timing["steps_timed"] >= math.ceil(n_adult / 64)
    # the machine's throughput is the sum of the jobs' (3 x 64 / each one's step time), which
    # is at least two jobs at the mean step time (AM-HM), equal when the jobs are equally fast;
    # one job's throughput alone would be about half of it
    assert timing["example_gradients_per_second"] >= (
        2 * 3 * 64 / timing["seconds_per_step"] * (1 - 1e-9))


def test_floor_times_the_unskippable_parts_and_charges_the_grid_work(n_adult):
    floor = time_floor(repeats=3, jobs=2)
    assert floor["runs"] == 90                                  # DP-FERMI's paper-scale job
    assert abs(floor["examples_per_step"] - 90 * 1024) < 90 * 1024 * 0.05
    assert set(floor["ms_per_step"]) == {"batches", "logits", "accumulation"}
    assert all(ms > 0 for ms in floor["ms_per_step"].values())
    work = sum(grid_work().values())
    per_example = sum(floor["ms_per_step"].values()) * 1e-3 / floor["examples_per_step"]
    assert floor["minutes"] == pytest.approx(work * per_example / 2 / 60)
    assert 0 < floor["minutes_sampling_and_logits"] < floor["minutes"]
