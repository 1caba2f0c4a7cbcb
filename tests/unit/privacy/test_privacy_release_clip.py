"""Programs that clip without privatizing (a stability-bounded output, a sum scaled before its
release) clip at their release's ``clip``, never at a bound of their own: the clip each call
of ``clipped_sum`` receives is the plan's (Release.clip, else the sensitivity). On the tiny
problems the gradients stay within the problems' constants, so a wrong clip would not show in
the outputs; this pins the wiring."""

import pytest
import torch
from test_conformance import CPU, N, problem, runs_of

from dpminimax.algorithms import get_method
from dpminimax.algorithms.bilevel import dp_bilevel
from dpminimax.algorithms.minimax import phased_sgd
from dpminimax.privacy.release import releases_of


@pytest.mark.parametrize("module, name, prefix, clip", [
    (phased_sgd, "phased_sgd", "output_", "lipschitz"),
    (dp_bilevel, "dp_bilevel", "outer", "outer_bound")])
def test_the_program_clips_at_its_release_clip(monkeypatch, module, name, prefix, clip):
    bounds, original = [], module.clipped_sum

    def spy(vectors, max_norm, mask=None):
        bounds.append(max_norm.clone())
        return original(vectors, max_norm, mask)

    monkeypatch.setattr(module, "clipped_sum", spy)
    method, data, runs = get_method(name), problem(), runs_of(name)
    method.fit(data, runs, CPU)
    planned = [{release.clip_bound for release in releases_of(method.plan(run, N, data).releases)
                if release.name.startswith(prefix)} for run in runs]
    assert bounds and all(len(bound) == 1 for bound in planned)
    expected = torch.tensor([bound.pop() for bound in planned], dtype=bounds[0].dtype)
    constant = getattr(method.problem(method.resolve(runs[0].params)).constants, clip)
    assert torch.allclose(expected, torch.full_like(expected, constant))   # L or C_out
    for bound in bounds:
        assert torch.equal(bound, expected)
