"""Per-release audits (issue #42): Dirac canaries in one release of a method's plan catch a bug
confined to that release (its noise / 2 or / 4) and nothing in another release; the real
release stays below its own epsilon; a Gaussian release's mu-GDP estimate and the smallest
epsilon the audit can see."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_conformance import DELTA, problem, tiny_params

from dpminimax.attacks.bugs import planted
from dpminimax.attacks.release_audit import (
    RELEASE_GUESS_FRACTIONS,
    audit_release,
    expected_correct,
    gaussian_mu,
    release_audit_rows,
    release_epsilon,
    smallest_detectable_epsilon,
)
from dpminimax.privacy.audit import epsilon_lower_bound
from dpminimax.privacy.release import Release


def test_a_laplace_release_made_once_spends_its_sensitivity_over_its_scale():
    """Noise Lap(multiplier x sensitivity) on a sum of that l1 sensitivity is
    (1 / multiplier)-DP, whatever the sensitivity."""
    assert release_epsilon(Release("histogram", "laplace", 4.0, 1.0), DELTA) == pytest.approx(
        0.25, rel=1e-3)
    assert release_epsilon(Release("histogram", "laplace", 4.0, 2.0), DELTA) == pytest.approx(
        0.25, rel=1e-3)


@pytest.mark.parametrize(("method", "release", "other"), [
    ("racodp", "histogram", "gradient"), ("dpfermi", "group_counts", "theta_gradient"),
    ("dpfermi", "w_gradient", "theta_gradient")])
def test_a_bug_in_one_release_is_caught_there_and_only_there(method, release, other):
    def audit(name, bug=None):
        return audit_release(method, problem(), tiny_params(method), 1.0, DELTA, name, bug=bug)

    bug = f"{release}_noise_over_4"
    real, broken, elsewhere = audit(release), audit(release, bug), audit(other, bug)
    assert not real["detected"] and real["epsilon_lower"] <= real["epsilon_claimed"]
    assert broken["detected"] and broken["epsilon_lower"] > 1.5 * broken["epsilon_claimed"]
    assert not elsewhere["detected"]
    assert elsewhere["epsilon_lower"] == audit(other)["epsilon_lower"]  # untouched


def test_the_mu_estimate_is_the_mean_shift_over_the_noise_scale_and_covers():
    """Released values sensitivity x included + N(0, s^2): mu = sensitivity / s whatever s (a
    noise scale of 3 with a shift of 1.5 is 0.5-GDP), and the 95% interval covers the true mu
    in about 95% of audits."""
    rng = np.random.default_rng(0)
    included = rng.random(200_000) < 0.5
    mu, low, high = gaussian_mu(1.5 * included + 3.0 * rng.normal(size=included.size),
                                included)
    assert low < 0.5 < high and mu == pytest.approx(0.5, abs=0.01) and high - low < 0.02
    covered = 0
    for _ in range(400):
        included = rng.random(1000) < 0.5
        _, low, high = gaussian_mu(0.6 * included + 2.0 * rng.normal(size=1000), included)
        covered += low < 0.3 < high
    assert 0.92 <= covered / 400 <= 0.98


def test_a_gaussian_release_estimates_its_planned_mu_and_four_times_it_with_noise_over_4():
    """DP-FERMI's W update (a Gaussian release): the estimate's interval holds 1 / its noise
    multiplier; with the noise / 4 planted in it, about 4 times that (the noise scale is read
    from the released values, not from the plan)."""
    def audit(bug=None):
        return audit_release("dpfermi", problem(), tiny_params("dpfermi"), 1.0, DELTA,
                             "w_gradient", bug=bug)

    real, broken = audit(), audit("w_gradient_noise_over_4")
    assert real["mu_low"] < real["mu_planned"] < real["mu_high"]
    assert broken["mu_low"] < 4 * real["mu_planned"] < broken["mu_high"]
    assert broken["mu_low"] > real["mu_high"]
    laplace = audit_release("racodp", problem(), tiny_params("racodp"), 1.0, DELTA, "histogram")
    assert math.isnan(laplace["mu_planned"]) and math.isnan(laplace["mu_estimate"])


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_the_expected_correct_guesses_are_those_of_simulated_audits(mechanism):
    rng = np.random.default_rng(1)
    noise = {"gaussian": rng.normal, "laplace": rng.laplace}[mechanism]
    m, half, shift = 20_000, 1000, 0.4
    counts = []
    for _ in range(30):
        included = rng.random(m) < 0.5
        order = np.argsort(-(shift * included + noise(size=m)))
        counts.append(included[order[:half]].sum() + (~included[order[-half:]]).sum())
    assert expected_correct(mechanism, shift, m, half) == pytest.approx(np.mean(counts),
                                                                         rel=0.01)


def test_the_smallest_detectable_epsilon_is_where_simulated_audits_start_to_detect():
    """A Gaussian release of noise multiplier 4 (eps 1.01 made once): its noise divided by
    a bit more than the smallest detectable divisor is detected in most audits at 10^5
    canaries, by a bit less in few."""
    release = Release("gradient", "gaussian", 4.0, 1.0)
    claimed = release_epsilon(release, DELTA)
    smallest = smallest_detectable_epsilon(release, DELTA)
    quarter = release_epsilon(Release("gradient", "gaussian", 1.0, 1.0), DELTA)
    assert claimed < smallest < quarter
    divisor = 4.0 / next(multiplier for multiplier in np.geomspace(4.0, 1.0, 2001)
                         if release_epsilon(Release("g", "gaussian", multiplier, 1.0),
                                            DELTA) >= smallest)
    rng = np.random.default_rng(2)

    def detections(factor: float) -> int:
        found = 0
        for _ in range(8):
            included = rng.random(100_000) < 0.5
            scores = factor / 4.0 * included + rng.normal(size=included.size)
            found += epsilon_lower_bound(scores, included, DELTA,
                                         fractions=RELEASE_GUESS_FRACTIONS).epsilon_lower \
                > claimed
        return found

    assert detections(divisor * 1.2) >= 6 and detections(divisor / 1.2) <= 2
    assert math.isinf(smallest_detectable_epsilon(release, DELTA, canaries=100))


def test_every_release_is_audited_with_its_noise_over_2_and_4_planted_in_it_alone():
    """RaCO-DP's plan (Gaussian gradient, Laplace histogram): three rows per release, the real
    one below its epsilon, noise / 4 detected in that release (its true epsilon the broken
    release's); the Gaussian rows' mu doubles and quadruples with the bug in that release."""
    rows = release_audit_rows("racodp", problem(), tiny_params("racodp"), 1.0, DELTA)
    assert [(row["release"], row["bug"]) for row in rows] == [
        (release, bug) for release in ("gradient", "histogram")
        for bug in ("none", "noise_over_2", "noise_over_4")]
    for release in ("gradient", "histogram"):
        real, half, quarter = (row for row in rows if row["release"] == release)
        assert not real["detected"] and quarter["detected"]
        assert real["epsilon_true"] == real["epsilon_claimed"] < half["epsilon_true"] \
            < quarter["epsilon_true"]
        assert real["epsilon_claimed"] < real["smallest_detectable_epsilon"] \
            < quarter["epsilon_true"]
    gaussian = [row for row in rows if row["release"] == "gradient"]
    for row, factor in zip(gaussian, (1, 2, 4), strict=True):
        assert row["mu_low"] < factor * row["mu_planned"] < row["mu_high"]
    assert all(math.isnan(row["mu_estimate"]) for row in rows if row["release"] == "histogram")


def test_an_unknown_release_or_bug_is_refused():
    with pytest.raises(ValueError, match="no release 'counts'"):
        audit_release("racodp", problem(), tiny_params("racodp"), 1.0, DELTA, "counts")
    with pytest.raises(ValueError, match="unknown planted bug"), planted("histogram_over_4"):
        pass


def test_a_planted_bug_reaches_releases_made_with_a_dtype_and_shrunk_ones():
    """The SPIDER methods shrink their difference releases (BatchedRelease.shrunk passes the
    dtype): a planted bug must reach those releases too, not fail on the extra argument."""
    import torch

    from dpminimax.privacy.release import BatchedRelease

    plan = Release("gradient", "gaussian", noise_multiplier=2.0, sensitivity=1.0)
    honest = BatchedRelease([plan], "cpu", torch.float64)
    with planted("gradient_noise_over_4"):
        made = BatchedRelease([plan], "cpu", torch.float64)
        shrunk = honest.shrunk(torch.tensor([0.5]))
    assert made.noise_std.item() == pytest.approx(honest.noise_std.item() / 4)
    assert shrunk.noise_std.item() == pytest.approx(honest.noise_std.item() / 8)
