"""The tuning's checkpoint rule on a gap-constrained method (Tran et al. 2021b): a checkpoint
counts as satisfying only where max_c |gap_c| <= alpha holds on the training set (issue #38:
tuned on accuracy alone, PF-LD's chosen configurations ignored their own constraint)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpminimax.algorithms import get_method
from dpminimax.data import load_dataset
from dpminimax.tuning.protocol import TuningSpec, fit_with_selection, phase1_runs, split_validation


@pytest.fixture(scope="module")
def synthetic():
    return load_dataset("synthetic-fair", max_rows=3000)


def _numpy_gaps(predicted: np.ndarray, y: np.ndarray, s: np.ndarray, fairness: str) -> float:
    """max |E[p | cell] - E[p | parent]| written out (demographic parity: cell = group,
    parent = everyone; equalized odds: cell = (y, group), parent = label y)."""
    gaps = []
    for label in ((None,) if fairness == "demographic_parity" else (0, 1)):
        parent = np.ones_like(y, bool) if label is None else y == label
        for group in np.unique(s):
            cell = parent & (s == group)
            gaps.append(abs(predicted[cell].mean() - predicted[parent].mean()))
    return max(gaps)


@pytest.mark.parametrize("fairness", ["demographic_parity", "equalized_odds"])
def test_training_violation_is_the_largest_hard_gap_minus_alpha(synthetic, fairness):
    method = get_method("tran2021b")
    resolved = [method.resolve({"alpha": a, "fairness": fairness}) for a in (0.0, 0.05, 0.3)]
    violation = method.training_violation(resolved, synthetic, torch.device("cpu"))
    rng = np.random.default_rng(0)
    y, s = synthetic.y_train, synthetic.s_train
    predictions = np.stack([(s == 1).astype(np.int64), np.ones_like(y),
                            rng.integers(0, 2, len(y))])
    got = violation(torch.as_tensor(predictions)).numpy()
    want = np.array([_numpy_gaps(p, y, s, fairness) for p in predictions]) - [0.0, 0.05, 0.3]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert got[1] == pytest.approx(-0.05)      # a constant predictor has no gap


def test_tran2021b_checkpoints_are_judged_by_its_constraint(synthetic):
    """alpha 0 cannot hold on hard predictions of a learned model, a loose alpha holds: the
    checkpoint rule says so per run (it said satisfied for every run before)."""
    method = get_method("tran2021b")
    tuning = TuningSpec.from_dict({"search": {"lr": {"values": [0.1]}}, "cell": ["alpha"],
                                   "configs": 1, "seeds": 1, "eval_every": 5})
    runs, _ = phase1_runs(tuning, {"alpha": [0.0, 1.0], "epochs": 2, "batch_size": 256},
                          1.0, 1e-5)
    data, x_val, y_val = split_validation(synthetic, tuning.validation_fraction)
    _, records = fit_with_selection(method, data, runs, torch.device("cpu"), x_val=x_val,
                                    y_val=y_val, eval_every=5)
    by_alpha = {run.params["alpha"]: record for run, record in zip(runs, records, strict=True)}
    assert by_alpha[1.0]["satisfied"] and by_alpha[1.0]["selection_train_violation"] <= 0
    assert not by_alpha[0.0]["satisfied"] and by_alpha[0.0]["selection_train_violation"] > 0
