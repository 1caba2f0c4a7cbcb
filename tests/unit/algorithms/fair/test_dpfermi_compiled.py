"""The compiled DP-FERMI step (logistic regression, CPU) against the torch step it replaces, its
bit-identity alone vs among other runs, and the padded sparse rows it reads."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dpminimax.algorithms.fair.dpfermi as dpfermi
from dpminimax.algorithms.base import expand_runs
from dpminimax.algorithms.fair.dpfermi import DpFermi, DpFermiCode, NonPrivateFermi
from dpminimax.algorithms.fair.dpfermi_compiled import fermi_sums
from dpminimax.data import PreparedDataset
from dpminimax.kernels.gather import RowGatherer

CPU = torch.device("cpu")


def _sparse_table(n: int = 600, classes: int = 2, groups: int = 2,
                  seed: int = 0) -> PreparedDataset:
    """Two continuous features and one-hot blocks (mostly zeros, like Adult), ``classes``
    labels and ``groups`` sensitive groups that shift the first feature."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, groups, n)
    continuous = rng.standard_normal((n, 2)) + 0.8 * s[:, None]
    block = np.eye(5)[rng.integers(0, 5, n)]
    x = np.concatenate([continuous, block, np.eye(3)[rng.integers(0, 3, n)]], axis=1)
    score = x[:, 0] + x[:, 3] - x[:, 4] + 0.5 * rng.standard_normal(n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))
    h = n // 2
    return PreparedDataset(
        name="sparse", kind="tabular", x_train=x[:h].astype(np.float32), y_train=y[:h],
        s_train=s[:h], x_test=x[h:].astype(np.float32), y_test=y[h:], s_test=s[h:],
        feature_names=[f"f{j}" for j in range(x.shape[1])],
        label_names=[str(c) for c in range(classes)],
        group_names=[f"g{g}" for g in range(groups)])


def _train(method, data, runs, steps, compiled, monkeypatch):
    """``steps`` steps of ``runs`` from a random (theta, W), on the compiled path or not (the
    program counts its compiled steps in ``compiled_steps``)."""
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return fermi_sums(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(dpfermi, "fermi_sums", counted)
        if not compiled:
            patch.setattr(dpfermi, "sparse_rows_supported", lambda *args: False)
        program, batches, *_ = method.build(data, runs, CPU)
        generator = torch.Generator().manual_seed(1)
        for key, value in program.state.items():
            program.state[key] = 0.3 * torch.randn(value.shape, generator=generator)
        program.w = program._project(torch.randn(program.w.shape, generator=generator))
        for _ in range(steps):
            program.step_on(*next(batches))
    program.compiled_steps = len(calls)
    return program


CASES = [
    (NonPrivateFermi(), {"fairness": "demographic_parity"}, float("inf"), 2, 2),
    (NonPrivateFermi(), {"fairness": "equalized_odds"}, float("inf"), 2, 3),
    (DpFermi(), {"fairness": "demographic_parity", "clip": 0.3, "clip_w": 0.2}, 4.0, 2, 2),
    (DpFermi(), {"fairness": "equalized_odds", "clip": 0.3, "clip_w": 0.2}, 4.0, 2, 3),
    (DpFermi(), {"fairness": "demographic_parity", "clip": 0.05,
                 "privacy": "sensitive_attribute"}, 4.0, 2, 3),
    (DpFermi(), {"fairness": "equalized_odds", "clip": 0.05,
                 "privacy": "sensitive_attribute"}, 4.0, 2, 2),
    (DpFermiCode(), {"fairness": "demographic_parity", "clip": 0.05}, 4.0, 2, 2),
    (DpFermiCode(), {"fairness": "demographic_parity", "clip": 0.05}, 4.0, 2, 3),
]


@pytest.mark.parametrize(("method", "grid", "eps", "classes", "groups"), CASES)
def test_compiled_step_equals_the_torch_step(method, grid, eps, classes, groups, monkeypatch):
    """Same sums, same noise streams, same updates: the two paths agree to float rounding over
    several steps, in every privacy mode (the clippings bind at these clip values), for
    demographic parity and equalized odds, 2 or 3 groups."""
    data = _sparse_table(classes=classes, groups=groups)
    runs = expand_runs([0, 1], eps, 1e-5, {"lam": [0.5, 4.0], "batch_size": 60, "epochs": 2,
                                           "lr": 0.5, "lr_w": 0.5, **grid})
    compiled = _train(method, data, runs, 5, True, monkeypatch)
    reference = _train(method, data, runs, 5, False, monkeypatch)
    assert (compiled.compiled_steps, reference.compiled_steps) == (5, 0)
    for key, value in reference.state.items():
        torch.testing.assert_close(compiled.state[key], value, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(compiled.w, reference.w, rtol=1e-4, atol=1e-5)
    moved = torch.linalg.vector_norm(compiled.state["weight"] - _train(
        method, data, runs, 0, True, monkeypatch).state["weight"])
    assert moved > 1e-3                                    # the steps did something


@pytest.mark.parametrize(("method", "grid", "eps", "classes", "groups"), CASES[1::2])
def test_a_run_gets_the_same_bits_alone_and_among_others(method, grid, eps, classes, groups):
    data = _sparse_table(classes=classes, groups=groups)
    runs = expand_runs([0, 1, 2], eps, 1e-5, {"lam": [0.5, 4.0], "batch_size": 60,
                                              "epochs": 3, "lr": 0.5, "lr_w": 0.5, **grid})
    batched = method.fit(data, runs, CPU)
    for r in (0, 3, 5):
        alone = method.fit(data, [runs[r]], CPU)
        for key, value in alone.state.items():
            assert torch.equal(batched.state[key][r], value[0])


def test_code_v1_equalized_odds_takes_the_torch_path(monkeypatch):
    """Code v1's equalized odds weights each example by its label's realised batch share (an
    unweighted sum of per-label batch means), which the compiled sums do not take: torch step."""
    data = _sparse_table(groups=3)
    runs = expand_runs([0], 4.0, 1e-5, {"lam": 2.0, "batch_size": 60, "epochs": 2, "lr": 0.5,
                                        "lr_w": 0.5, "clip": 0.05,
                                        "fairness": "equalized_odds"})
    program = _train(DpFermiCode(), data, runs, 3, True, monkeypatch)
    assert program.linear and not program.compiled and program.compiled_steps == 0
    assert torch.isfinite(program.state["weight"]).all()


def test_multinomial_logistic_regression_takes_the_torch_path(monkeypatch):
    """The compiled sums are written for two classes: 3-class logistic regression runs the torch
    step (and trains), and the compiled sums refuse more than one logit."""
    data = _sparse_table(classes=3)
    runs = expand_runs([0], 4.0, 1e-5, {"lam": 2.0, "batch_size": 60, "epochs": 2, "lr": 0.5,
                                        "lr_w": 0.5, "clip": 0.3, "clip_w": 0.2})
    program = _train(DpFermi(), data, runs, 3, True, monkeypatch)
    assert program.linear and not program.compiled and program.compiled_steps == 0
    assert program.state["weight"].shape[1] == 3
    assert torch.isfinite(program.state["weight"]).all()
    rows = RowGatherer(torch.as_tensor(data.x_train)).take(torch.zeros(1, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="binary logistic regression"):
        fermi_sums(rows, torch.ones(len(data.y_train)), torch.ones(1, 4, dtype=torch.bool),
                   *(torch.as_tensor(v) for v in (data.y_train, data.s_train, data.y_train)),
                   program.state, program.w, program.p_s, program.lam, program.clip,
                   program.clip_w, 1)


def test_nonzeros_are_the_rows_in_column_order_padded_with_zeros():
    x = torch.tensor([[0.0, 2.0, 0.0, -3.0], [1.5, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    columns, values = RowGatherer(x).nonzeros()
    assert columns.tolist() == [[1, 3], [0, 0], [0, 0]]
    assert values.tolist() == [[2.0, -3.0], [1.5, 0.0], [0.0, 0.0]]
    assert columns.dtype == torch.int16
    dense = torch.zeros_like(x).scatter_add_(1, columns.long(), values)
    assert torch.equal(dense, x)
