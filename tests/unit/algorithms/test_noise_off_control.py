"""The noiseless clipped control of every private method (issue #38: is a gap privacy or
optimization?): ``<name>_noise_off`` is the private run with only its noise removed. Its fit is
the private fit with every release's noise zeroed (the audits' ``planted("noise_off")``) bit for
bit: the same plan at the same epsilon (sampling rate, steps, clips, releases), the same number
of steps, every release's noise std 0; its record claims no privacy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from release_spy import CPU, ReleaseSpy
from test_conformance import DELTA, TARGET, problem, tiny_params

from dpminimax.algorithms import CONTROLS, METHODS, get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.attacks.bugs import planted
from dpminimax.privacy.release import releases_of

#: The methods of issue #38's diagnosis and one paper-004 (DRO) method.
CHECKED = ("dp_sgd", "racodp", "dpfermi", "tran2021a", "tran2021b", "jagielski2019",
           "dp_sgda_dro")


#: RaCO-DP's step cap above the T its accountant allows at the target (102 here), so that a
#: control planned at epsilon inf (max_steps steps, as racodp_nonprivate) would differ.
UNCAPPED = {"racodp": {"max_steps": 1000}}


def _runs(name: str) -> list[RunSpec]:
    return [RunSpec(seed, TARGET, DELTA, tiny_params(name) | UNCAPPED.get(name, {}))
            for seed in (0, 1)]


def _fit(name: str, bug: str | None = None):
    """The fit of ``name`` on the toy problem, its steps and the releases it perturbed."""
    steps = []
    with pytest.MonkeyPatch.context() as patch, planted(bug):
        spy = ReleaseSpy(patch)
        fit = get_method(name).fit(problem(), _runs(name.removesuffix("_noise_off")), CPU,
                                   monitor=lambda step, model, state: steps.append(step))
    return fit, steps, spy


def test_every_private_method_has_one_control_outside_the_conformance_methods():
    assert sorted(CONTROLS) == sorted(f"{name}_noise_off" for name, cls in METHODS.items()
                                      if cls.private)
    assert not set(CONTROLS) & set(METHODS)
    assert all(cls.control == "noise_off" for cls in CONTROLS.values())


@pytest.mark.parametrize("name", CHECKED)
@pytest.mark.slow
def test_control_is_the_private_fit_with_its_noise_zeroed(name):
    private, private_steps, _ = _fit(name, "noise_off")
    control, control_steps, spy = _fit(f"{name}_noise_off")
    assert control_steps == private_steps and control_steps
    if name in UNCAPPED:
        assert len(control_steps) < UNCAPPED[name]["max_steps"]
    assert control.resolved_params == private.resolved_params  # same plan: q, T, sigma, clips
    assert control.state.keys() == private.state.keys()
    for key in private.state:
        np.testing.assert_array_equal(control.state[key].numpy(), private.state[key].numpy(),
                                      err_msg=key)
    noisy, _, _ = _fit(name)
    assert any(not np.array_equal(noisy.state[key].numpy(), control.state[key].numpy())
               for key in control.state), "the private fit's noise changed nothing"
    # every release it makes is planned with noise and made without
    made = [release for releases, _, _ in spy.perturbs + spy.selections for release in releases]
    assert made and all(release.noise_off and release.noise_multiplier > 0 or
                        release.noise_multiplier == 0 for release in made)
    assert any(release.noise_off for release in made)
    for releases, summed, out in spy.perturbs:
        for key in summed if isinstance(summed, dict) else [None]:
            before = summed[key] if key is not None else summed
            after = out[key] if key is not None else out
            assert bool((before == after).all()), f"{name}: release {releases[0].name} noised"


@pytest.mark.parametrize("name", CHECKED)
def test_control_plans_as_the_private_method_and_claims_no_privacy(name):
    data, runs = problem(), _runs(name)
    private = get_method(name)
    control = get_method(f"{name}_noise_off")
    _, _, planned = private.plan_runs(data, runs)
    _, _, controls = control.plan_runs(data, runs)
    for plan, silenced in zip(planned, controls, strict=True):
        assert silenced.values == plan.values
        pairs = list(zip(releases_of(plan.releases), releases_of(silenced.releases),
                         strict=True))
        assert all(a.noise_off is False and b.noise_off is True and not b.private
                   and (a.name, a.noise_multiplier, a.sensitivity, a.clip_bound)
                   == (b.name, b.noise_multiplier, b.sensitivity, b.clip_bound)
                   for a, b in pairs)
        assert silenced.record["epsilon"] == math.inf
        assert silenced.record["guarantee_covered"] is False
        assert silenced.record["control"] == "noise_off"
        assert silenced.record["planned_epsilon"] == plan.record["epsilon"] <= TARGET * 1.0001
        assert silenced.event().__class__.__name__ == "NonPrivateDpEvent"


def test_control_needs_an_epsilon_to_plan_at():
    with pytest.raises(ValueError, match="private"):
        get_method("dp_sgd_noise_off").plan_runs(
            problem(), [RunSpec(0, math.inf, DELTA, tiny_params("dp_sgd"))])


def test_control_row_says_so(tmp_path):
    from dpminimax import api
    from dpminimax.data.storage import save_prepared
    data_dir = tmp_path / "data"
    save_prepared(problem(), data_dir)
    for name in ("dp_sgd", "dp_sgd_noise_off"):
        table = api.train({"paper": "t", "experiment": "e", "dataset": "toy", "method": name,
                           "epsilon": TARGET, "delta": DELTA, "seeds": [0], "scale": "smoke",
                           "params": tiny_params("dp_sgd")},
                          data_dir=data_dir, out_dir=tmp_path / name)
        row = table.iloc[0]
        if name == "dp_sgd":
            assert row["control"] == "none" and row["epsilon_spent"] <= TARGET
        else:
            assert row["control"] == "noise_off" and row["epsilon_spent"] == math.inf
            assert not row["guarantee_covered"] and 0 < row["epsilon_planned"] <= TARGET


def test_controls_run_at_the_quick_scale_only_and_are_drawn_apart():
    from dpminimax.experiments import expand_jobs, load_experiments
    from dpminimax.report.style import method_style
    spec = load_experiments("papers/racodp/experiments.yaml")
    controls = {scale: {(job.experiment, str(job.epsilon)) for job in expand_jobs(spec, scale)
                        if job.method == "racodp_noise_off"} for scale in ("default", "quick")}
    assert not controls["default"]
    assert {("fig9_low_budget", "1"), ("fig4_dp", "1")} <= controls["quick"]
    private, control = method_style("racodp"), method_style("racodp_noise_off")
    assert control.label == f"{private.label} (noise off)"
    assert control.color != private.color and control.marker == private.marker


@pytest.mark.parametrize("name", ["dp_sgda_dro", "privatediff_dro", "dp_double_spider",
                                  "dp_recursive_spider"])
@pytest.mark.slow
def test_dro_controls_at_inf_equal_the_noise_off_controls(name):
    """Paper 004's ``<name>_control`` (issue #37: the non-private twin at epsilon inf with the
    private clips and schedule) trains the same bits as ``<name>_noise_off`` at a finite
    epsilon: their step counts do not depend on epsilon, and neither adds noise."""
    runs = _runs(name)
    twin = get_method(f"{name}_control").fit(
        problem(), [RunSpec(run.seed, math.inf, DELTA, run.params) for run in runs], CPU)
    control = get_method(f"{name}_noise_off").fit(problem(), runs, CPU)
    for key in control.state:
        np.testing.assert_array_equal(twin.state[key].numpy(), control.state[key].numpy())
