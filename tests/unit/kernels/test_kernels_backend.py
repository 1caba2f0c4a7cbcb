"""The one kernel switch (dpminimax.kernels.backend): ``torch`` sends every compiled loop to its
torch path (DP-FERMI's and PF-LD's fused sums included), and the two backends train the same
runs to the same values up to float rounding."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from toydata import toy_dataset

import dpminimax.algorithms.fair.dpfermi as dpfermi
import dpminimax.algorithms.fair.tran2021b as tran2021b
from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import expand_runs
from dpminimax.kernels.backend import ENVIRONMENT, kernel_backend, use_kernels
from dpminimax.kernels.rowwise import compiled_supported

CPU = torch.device("cpu")


def _one_hot_data(n=400, seed=0):
    """Sparse one-hot features (the compiled sparse-row path), a label and two groups."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 4, size=(n, 3))
    x = np.zeros((n, 12), dtype=np.float32)
    for j in range(3):
        x[np.arange(n), 4 * j + codes[:, j]] = 1.0
    s = rng.integers(0, 2, n)
    y = ((codes[:, 0] >= 2) ^ (rng.random(n) < 0.2)).astype(int)
    return toy_dataset(x, y, s)


def test_the_switch_gates_every_compiled_loop():
    z = torch.zeros(3, 2)
    assert kernel_backend() == "auto" and compiled_supported(z)
    with use_kernels("torch"):
        assert kernel_backend() == "torch" and not compiled_supported(z)
    assert compiled_supported(z)
    with pytest.raises(ValueError, match="must be one of"):
        with use_kernels("numba"):
            pass


def test_an_unknown_backend_in_the_environment_names_the_allowed_ones(monkeypatch):
    monkeypatch.setenv(ENVIRONMENT, "fast")
    with pytest.raises(ValueError, match=r"DPMINIMAX_KERNELS='fast': must be one of"):
        compiled_supported(torch.zeros(2))


@pytest.mark.parametrize("name, fused, params", [
    ("dpfermi", "fermi_sums", {"epochs": 2, "batch_size": 64}),
    ("tran2021b", "pfld_sums", {"epochs": 2, "batch_size": 64}),
])
def test_torch_backend_skips_the_fused_sums_and_trains_the_same_runs(name, fused, params,
                                                                    monkeypatch):
    module = {"dpfermi": dpfermi, "tran2021b": tran2021b}[name]
    original, calls = getattr(module, fused), []

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, fused, counted)
    data, runs = _one_hot_data(), expand_runs([0, 1], 3.0, 1e-5, params)
    compiled = get_method(name).fit(data, runs, CPU)
    assert calls, "the auto backend should take the fused compiled sums here"
    calls.clear()
    with use_kernels("torch"):
        reference = get_method(name).fit(data, runs, CPU)
    assert not calls
    for key, value in compiled.state.items():
        torch.testing.assert_close(value, reference.state[key], rtol=1e-4, atol=1e-5)
