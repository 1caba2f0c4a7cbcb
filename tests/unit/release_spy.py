"""A spy on every noisy release a fit makes (the privacy tests' view of a program)."""

from __future__ import annotations

import pytest
import torch

from dpminimax.privacy.release import BatchedRelease

CPU = torch.device("cpu")


def spied_fit(method, data, runs, device=CPU):
    """Fit ``runs`` and return every ``BatchedRelease.perturb`` call it made, as
    (releases, summed sum, noisy output)."""
    calls = []
    original = BatchedRelease.perturb

    def perturb(release, summed, generators):
        out = original(release, summed, generators)
        calls.append((release.releases, summed.clone(), out.clone()))
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BatchedRelease, "perturb", perturb)
        method.fit(data, runs, device)
    return calls
