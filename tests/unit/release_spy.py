"""A spy on every noisy release a fit makes (the privacy tests' view of a program)."""

from __future__ import annotations

import pytest
import torch

from dpminimax.privacy.release import BatchedRelease

CPU = torch.device("cpu")


class ReleaseSpy:
    """While installed (``patch``, a pytest MonkeyPatch), records every
    ``BatchedRelease.perturb`` call in ``perturbs`` as (releases, summed sum, noisy output) and
    every report-noisy-min call (``BatchedRelease.select_min``) in ``selections`` as
    (releases, scores, chosen indices)."""

    def __init__(self, patch) -> None:
        self.perturbs, self.selections = [], []
        original, original_select = BatchedRelease.perturb, BatchedRelease.select_min

        def perturb(release, summed, generators):
            out = original(release, summed, generators)
            self.perturbs.append((release.releases, _cloned(summed), _cloned(out)))
            return out

        def select_min(release, scores, generators):
            chosen = original_select(release, scores, generators)
            self.selections.append((release.releases, scores.clone(), chosen.clone()))
            return chosen

        patch.setattr(BatchedRelease, "perturb", perturb)
        patch.setattr(BatchedRelease, "select_min", select_min)

    def clear(self) -> None:
        self.perturbs, self.selections = [], []


def _cloned(value):
    if isinstance(value, dict):
        return {key: tensor.clone() for key, tensor in value.items()}
    return value.clone()


def spied_fit(method, data, runs, device=CPU, selections=None):
    """Fit ``runs`` and return every ``perturb`` call it made (:class:`ReleaseSpy`); the
    report-noisy-min calls are appended to ``selections``."""
    with pytest.MonkeyPatch.context() as patch:
        spy = ReleaseSpy(patch)
        method.fit(data, runs, device)
    if selections is not None:
        selections.extend(spy.selections)
    return spy.perturbs
