"""A spy on every noisy release a fit makes (the privacy tests' view of a program)."""

from __future__ import annotations

import pytest
import torch

from dpminimax.privacy.release import BatchedRelease

CPU = torch.device("cpu")


def spied_fit(method, data, runs, device=CPU, selections=None):
    """Fit ``runs`` and return every ``BatchedRelease.perturb`` call it made, as
    (releases, summed sum, noisy output); each report-noisy-min call
    (``BatchedRelease.select_min``) is appended to ``selections`` as (releases, scores, chosen
    indices)."""
    calls = []
    original, original_select = BatchedRelease.perturb, BatchedRelease.select_min

    def perturb(release, summed, generators):
        out = original(release, summed, generators)
        calls.append((release.releases, summed.clone(), out.clone()))
        return out

    def select_min(release, scores, generators):
        chosen = original_select(release, scores, generators)
        if selections is not None:
            selections.append((release.releases, scores.clone(), chosen.clone()))
        return chosen

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BatchedRelease, "perturb", perturb)
        patch.setattr(BatchedRelease, "select_min", select_min)
        method.fit(data, runs, device)
    return calls
