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
    (releases, scores, chosen indices).

    With ``replay`` (another spy's ``record``), the program is given that record's outputs instead
    of its own (its noise is still drawn, so its generators advance as they would): a program
    on a neighbouring dataset then sees exactly what the recorded program released, and each
    of its sums differs from the recorded one only by what the changed example contributes
    (the coupling of adaptive composition)."""

    def __init__(self, patch, replay: tuple[list, list] | None = None) -> None:
        self.perturbs, self.selections = [], []
        original, original_select = BatchedRelease.perturb, BatchedRelease.select_min
        recorded = (None, None) if replay is None else replay

        def perturb(release, summed, generators):
            out = _replayed(recorded[0], len(self.perturbs), release,
                            original(release, summed, generators))
            self.perturbs.append((release.releases, _cloned(summed), _cloned(out)))
            return out

        def select_min(release, scores, generators):
            chosen = _replayed(recorded[1], len(self.selections), release,
                               original_select(release, scores, generators))
            self.selections.append((release.releases, scores.clone(), chosen.clone()))
            return chosen

        patch.setattr(BatchedRelease, "perturb", perturb)
        patch.setattr(BatchedRelease, "select_min", select_min)

    @property
    def record(self) -> tuple[list, list]:
        """The calls so far: (perturbs, selections)."""
        return self.perturbs, self.selections

    def clear(self) -> None:
        self.perturbs, self.selections = [], []


def _replayed(record, k: int, release, own):
    """``own``, or (replaying ``record``) a copy of the recorded k-th output of the same
    release."""
    if record is None:
        return own
    assert k < len(record) and record[k][0][0].name == release.name, (
        f"call {k} ({release.name!r}) is not the recorded program's: its control flow "
        "depends on the data beyond what it released")
    return _cloned(record[k][2])


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
