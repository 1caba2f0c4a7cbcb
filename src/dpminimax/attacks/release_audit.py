"""An audit of every release of a method's plan (issue #42, items 1 and 2): Dirac canaries in
one release at a time, one invocation, eps_lower beside the release's own epsilon, for the
release as planned and with its noise / 2 and / 4.

The canary audit of :mod:`dpminimax.attacks.canaries` scores the model, so it sees the gradient
release; a bug confined to another release (RaCO-DP's histogram, DP-FERMI's group counts and W
updates, Tran et al. 2021b's dual steps) hides in it. Here the release is made as the method's
program makes it, a :class:`~dpminimax.privacy.release.BatchedRelease` of the :class:`Release`
its plan names (so :func:`~dpminimax.attacks.bugs.planted` reaches it, a
``<release>_noise_over_2`` / ``_noise_over_4`` bug included), and fed ``m`` canaries:
coordinate ``j`` of the released vector holds the release's sensitivity if canary ``j`` is
included (probability 1/2, as Steinke, Nasr & Jagielski 2023) and 0 if not. One canary changes
one coordinate by the sensitivity, in l1 and l2 alike, so the invocation is (eps, delta)-DP per
canary with the epsilon of the release made once (:func:`release_epsilon`), and the one-run
bound of :mod:`dpminimax.privacy.audit` on the released coordinates (higher: included) must
stay below it. What this isolates is the noise the release's plan puts on its sum; the
program's sum itself (what it adds, and how it clips) is the canary audit's.

Beside the bound: for a Gaussian release, its mu-GDP estimate from the same canaries
(:func:`gaussian_mu`; a Gaussian release of noise multiplier sigma is 1/sigma-GDP made once,
Dong, Roth & Su 2022, Thm. 2.7), and for every release the smallest epsilon a bug must give it
for this audit to see it at this canary count (:func:`smallest_detectable_epsilon`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from scipy import optimize, stats

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.attacks.bugs import NEAR_CLAIM_BUGS, planted
from dpminimax.data import PreparedDataset
from dpminimax.privacy.accounting import accounting_record
from dpminimax.privacy.audit import epsilon_lower_bound, p_value
from dpminimax.privacy.release import Batch, BatchedRelease, Release, plan_event, releases_of
from dpminimax.seeding import make_generator

#: Canaries per audited release (one invocation: a vector of this many coordinates).
RELEASE_CANARIES = 100_000
#: The guess counts tried (fractions of the canaries, Bonferroni-corrected): with 10^5 Dirac
#: canaries the most confident few percent carry the evidence (measured on Gaussian scores at
#: mu 0.25: 0.61 proven guessing 1% of them, 0.19 guessing all), and they are the cheap ones.
RELEASE_GUESS_FRACTIONS = (0.01, 0.03, 0.1)
#: The mechanisms audited here: an exponential release publishes an index, not a vector.
PERTURBED = ("gaussian", "laplace")
#: Noise divisors searched for the smallest detectable epsilon (1 to this).
LARGEST_DIVISOR = 4096.0
_SCORES = {"gaussian": stats.norm, "laplace": stats.laplace}


def release_epsilon(release: Release, delta: float, accountant: str = "rdp") -> float:
    """The epsilon of ``release`` made once on the full data (no sampling, no composition)."""
    return float(accounting_record(plan_event(Batch((release,))), delta, accountant)["epsilon"])


def gaussian_mu(scores: np.ndarray, included: np.ndarray, confidence: float = 0.95
                ) -> tuple[float, float, float]:
    """``(estimate, low, high)`` of the mu of a mu-GDP release from its canaries' released
    values: the difference of the included and excluded means over their pooled standard
    deviation (the noise scale, measured: a bug that cuts the noise raises mu), with a
    two-sided normal interval at ``confidence`` (the delta-method variance of a standardized
    mean difference, ``1/n1 + 1/n0 + mu^2 / (2 (n1 + n0))``). An estimate, not a bound: it
    assumes the Gaussian shape the release claims."""
    scores, included = np.asarray(scores, dtype=np.float64), np.asarray(included, dtype=bool)
    inside, outside = scores[included], scores[~included]
    if min(len(inside), len(outside)) < 2:
        raise ValueError("the mu estimate needs two included and two excluded canaries")
    pooled = ((len(inside) - 1) * inside.var(ddof=1) + (len(outside) - 1) * outside.var(ddof=1)) \
        / (len(scores) - 2)
    mu = float((inside.mean() - outside.mean()) / math.sqrt(pooled))
    spread = stats.norm.ppf(0.5 + confidence / 2) * math.sqrt(
        1 / len(inside) + 1 / len(outside) + mu ** 2 / (2 * len(scores)))
    return mu, mu - spread, mu + spread


def audit_release(method_name: str, data: PreparedDataset, params: Mapping[str, Any],
                  epsilon: float, delta: float, release: str, *,
                  canaries: int = RELEASE_CANARIES, seed: int = 0, bug: str | None = None,
                  confidence: float = 0.95) -> dict[str, Any]:
    """eps_lower of the release named ``release`` in the plan of ``method_name`` on ``data``
    (planned on its :meth:`sample_size`) at (epsilon, delta), ``bug`` planted while it is made,
    beside that release's own epsilon (``epsilon_claimed``; ``detected``: eps_lower above it);
    for a Gaussian release also ``mu_planned`` (1 / its noise multiplier) and the estimate
    :func:`gaussian_mu` (``mu_estimate``, ``mu_low``, ``mu_high``; NaN otherwise)."""
    method = get_method(method_name)
    run = RunSpec(seed, float(epsilon), float(delta), dict(params))
    plan = method.plan(run, method.sample_size(data, {}), data)
    planned = {r.name: r for r in releases_of(plan.releases)}
    if release not in planned:
        raise ValueError(f"{method_name} makes no release {release!r}; its releases: "
                         f"{sorted(planned)}")
    audited = planned[release]
    if audited.mechanism not in PERTURBED or not audited.private:
        raise ValueError(f"{method_name}'s release {release!r} is {audited.mechanism} with "
                         f"noise multiplier {audited.noise_multiplier}: the release audit "
                         f"reads a noised vector ({'/'.join(PERTURBED)})")
    with planted(bug):
        made = BatchedRelease([audited])
    rng = np.random.default_rng(seed)
    included = rng.random(canaries) < 0.5
    summed = torch.as_tensor(np.where(included, audited.sensitivity, 0.0)[None],
                             dtype=torch.float64)
    released = made.perturb(summed, [make_generator(seed, f"audit:{release}", "cpu")])
    scores = released[0].numpy()
    claimed = release_epsilon(audited, delta, plan.record["accountant"])
    result = epsilon_lower_bound(scores, included, delta, confidence, RELEASE_GUESS_FRACTIONS)
    mu = (gaussian_mu(scores, included, confidence) if audited.mechanism == "gaussian"
          else (math.nan,) * 3)
    return {"method": method_name, "release": release, "mechanism": audited.mechanism,
            "bug": bug or "none", "epsilon_claimed": claimed,
            "epsilon_lower": result.epsilon_lower, "confidence": confidence,
            "canaries": canaries, "guesses": result.guesses, "correct": result.correct,
            "detected": result.epsilon_lower > claimed, "delta": float(delta), "seed": seed,
            "canary_norm": audited.sensitivity,
            "neighboring_relation": plan.record.get("neighboring_relation"),
            "mu_planned": (1.0 / audited.noise_multiplier if audited.mechanism == "gaussian"
                           else math.nan),
            "mu_estimate": mu[0], "mu_low": mu[1], "mu_high": mu[2]}


def release_audit_rows(method_name: str, data: PreparedDataset, params: Mapping[str, Any],
                       epsilon: float, delta: float, *, canaries: int = RELEASE_CANARIES,
                       seed: int = 0, confidence: float = 0.95) -> list[dict[str, Any]]:
    """Every noised Gaussian or Laplace release of the method's plan, audited as planned and
    with its noise / 2 and / 4 (``bug`` ``noise_over_2`` / ``noise_over_4`` planted in that
    release alone, ``epsilon_true`` the broken release's epsilon), each row with the release's
    ``smallest_detectable_epsilon`` at ``canaries``."""
    releases, accountant = audited_releases(method_name, data, params, epsilon, delta, seed)
    rows = []
    for release in releases:
        claimed = release_epsilon(release, delta, accountant)
        smallest = smallest_detectable_epsilon(release, delta, accountant, canaries=canaries,
                                               confidence=confidence)
        for bug in (None, *NEAR_CLAIM_BUGS):
            row = audit_release(method_name, data, params, epsilon, delta, release.name,
                                canaries=canaries, seed=seed, confidence=confidence,
                                bug=None if bug is None else f"{release.name}_{bug}")
            true = claimed if bug is None else release_epsilon(
                replace(release, noise_multiplier=release.noise_multiplier
                        / NEAR_CLAIM_BUGS[bug]), delta, accountant)
            rows.append({**row, "bug": bug or "none", "epsilon_true": true,
                         "smallest_detectable_epsilon": smallest})
    return rows


def audited_releases(method_name: str, data: PreparedDataset, params: Mapping[str, Any],
                     epsilon: float, delta: float, seed: int = 0) -> tuple[list[Release], str]:
    """The noised Gaussian and Laplace releases of the method's plan on ``data`` (what
    :func:`release_audit_rows` audits) and the plan's accountant."""
    method = get_method(method_name)
    run = RunSpec(seed, float(epsilon), float(delta), dict(params))
    plan = method.plan(run, method.sample_size(data, {}), data)
    return ([release for release in releases_of(plan.releases)
             if release.mechanism in PERTURBED and release.private],
            plan.record["accountant"])


def smallest_detectable_epsilon(release: Release, delta: float, accountant: str = "rdp", *,
                                canaries: int = RELEASE_CANARIES,
                                confidence: float = 0.95) -> float:
    """The smallest epsilon (made once) of ``release`` with its noise divided, by a factor
    from 1 to :data:`LARGEST_DIVISOR`, that this audit detects against the release's planned
    epsilon at ``canaries`` with the expected counts of correct guesses (so about half the
    audits of such a bug detect it); inf when even the largest divisor is not detected."""
    divisor = _smallest_divisor(release.mechanism, release.noise_multiplier,
                                release_epsilon(release, delta, accountant), float(delta),
                                int(canaries), float(confidence))
    if math.isinf(divisor):
        return math.inf
    return release_epsilon(replace(release, noise_multiplier=release.noise_multiplier
                                   / divisor), delta, accountant)


@functools.lru_cache(maxsize=256)
def _smallest_divisor(mechanism: str, multiplier: float, claimed: float, delta: float,
                      canaries: int, confidence: float) -> float:
    """The smallest noise divisor (to 1%) whose expected audit proves more than ``claimed``
    (releases of equal noise and claim share it: cached)."""
    level = (1.0 - confidence) / len(RELEASE_GUESS_FRACTIONS)

    def detected(divisor: float) -> bool:
        shift = divisor / multiplier  # the sensitivity in units of the noise scale
        for fraction in RELEASE_GUESS_FRACTIONS:
            half = max(1, int(fraction * canaries) // 2)
            correct = expected_correct(mechanism, shift, canaries, half)
            if p_value(canaries, 2 * half, correct, claimed, delta) <= level:
                return True
        return False

    if detected(1.0):
        return 1.0
    if not detected(LARGEST_DIVISOR):
        return math.inf
    low, high = 1.0, LARGEST_DIVISOR
    while high / low > 1.01:
        middle = math.sqrt(low * high)
        low, high = (low, middle) if detected(middle) else (middle, high)
    return high


def expected_correct(mechanism: str, shift: float, canaries: int, half: int) -> int:
    """The expected number of correct guesses (rounded) when the ``half`` highest of
    ``canaries`` released values are guessed in and the ``half`` lowest out, each value the
    mechanism's standard noise plus ``shift`` if its canary is included (probability 1/2)."""
    noise = _SCORES[mechanism]
    tail = half / canaries
    top = optimize.brentq(lambda t: (noise.sf(t) + noise.sf(t - shift)) / 2 - tail,
                          -60.0, 60.0 + shift)
    bottom = optimize.brentq(lambda t: (noise.cdf(t) + noise.cdf(t - shift)) / 2 - tail,
                             -60.0, 60.0 + shift)
    return int(round(canaries / 2 * (noise.sf(top - shift) + noise.cdf(bottom))))
