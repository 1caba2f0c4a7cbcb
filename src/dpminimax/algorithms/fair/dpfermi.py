"""DP-FERMI: private fair ERM by noisy two-timescale SGDA (Lowy, Gupta, Razaviyayn, ICLR 2023,
Algorithm 1, Thm. 3.2), and its non-private twin, for R runs at once.

The ERMI regulariser in its min-max form (Thm. 3.2 / Lemma D.1,
:mod:`dpminimax.algorithms.fair.ermi`): descent on theta of ``mean_i [l_i + lam psi_i]``,
projected ascent on W of ``lam mean_i psi_i`` onto the Frobenius ball of radius ``w_radius``
(W0 = 0), simultaneous updates, last iterate; equalized odds weights each label's term by
p_Y(y) (App. B eq. 5). Every theta step is the model's ``private_step`` from the per-example
residual (chain rule through the softmax).

Privacy (``privacy``): ``"example"`` (default; add/remove one example, Poisson batches,
per-example clipping, sigma calibrated on the event derived from :func:`fermi_releases`) or
``"sensitive_attribute"`` (Thm. 3.3's closed-form noise; its Lipschitz assumption made true by
clipping the s-dependent part of the theta-gradient). ``code_faithful=True`` reproduces the
released code v1. The derivation, both privacy arguments, the code-faithful details and the
deviations with their reasons: ``papers/dpfermi/NOTES.md``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from scipy.stats import binom

from dpminimax.algorithms.base import (
    Method,
    RunPlan,
    RunSpec,
    nonprivate_twin,
    require_binary_labels,
)
from dpminimax.algorithms.fair.dpfermi_compiled import (
    CLIP_EXAMPLE,
    CLIP_NONE,
    CLIP_SENSITIVE,
    fermi_sums,
)
from dpminimax.algorithms.fair.ermi import psi_grad_f_parts, psi_grad_w, psi_grad_w_norms
from dpminimax.algorithms.params import (
    ACCOUNTANT,
    CLIP,
    COUNT,
    FLAG,
    MODEL,
    NON_NEGATIVE,
    POSITIVE,
    Check,
    one_of,
)
from dpminimax.data import PreparedDataset
from dpminimax.data.inputs import training_rows
from dpminimax.kernels.clip import clip_each_run, clip_scaled
from dpminimax.kernels.gather import IndexedRows, batch_values, compact_codes
from dpminimax.kernels.linear import clipped_outer_sum, linear_logits, noisy_linear_descent
from dpminimax.kernels.membership import Members, member_rows, sample_sizes, to_rows
from dpminimax.kernels.rowwise import row_softmax
from dpminimax.kernels.sampling import poisson_batches, shuffled_batches
from dpminimax.kernels.sparse_rows import sparse_rows_supported
from dpminimax.models.batched import BatchedLogisticRegression
from dpminimax.models.network import batched_model
from dpminimax.privacy import epsilon
from dpminimax.privacy.calibrate import calibrate_release_parameter
from dpminimax.privacy.paper_bounds import (
    code_rho,
    code_steps,
    theorem_3_3_conditions,
    theorem_3_3_sigma_theta,
    theorem_3_3_sigma_w,
)
from dpminimax.privacy.release import Batch, BatchedRelease, Release, Repeat, plan_event
from dpminimax.seeding import make_generator

#: One value per batched program: they fix the sampling, the step count and the shapes.
SHARED = ("batch_size", "epochs", "fairness", "privacy", "code_faithful", "accountant", "model")
FAIRNESS = ("demographic_parity", "equalized_odds")
SENSITIVE_NOTION = "sensitive-attribute DP (replace one example's sensitive attribute)"
EXAMPLE_NOTION = "example-level DP (add or remove one example)"


#: DP-FERMI's releases (Alg. 1): P_S's group counts (line 2), the theta and W gradients (5-6).
RELEASES = ("group_counts", "theta_gradient", "w_gradient")


def fermi_releases(counts: Release, theta: Release, w: Release, steps: int,
                   q: float | None) -> Repeat:
    """Alg. 1's releases: the group counts once (line 2), then ``steps`` rounds of the theta and
    W releases (lines 5-6) from one batch, Poisson(``q``) or (``q`` None) shuffled, for which no
    amplification is claimed."""
    return Repeat((Batch((counts,)), Batch((theta, w), count=steps, sampling_rate=q)))


def example_releases(q: float, steps: int, count_noise: float, sigma: float, clip: float,
                     clip_w: float) -> Repeat:
    """Example mode: the counts (l2 sensitivity 1) with Gaussian noise ``count_noise``, the
    clipped theta- and W-gradient sums (sensitivities ``clip``, ``clip_w``) with multiplier
    ``sigma``."""
    return fermi_releases(Release("group_counts", "gaussian", count_noise, 1.0),
                          Release("theta_gradient", "gaussian", sigma, clip),
                          Release("w_gradient", "gaussian", sigma, clip_w), steps, q)


@dataclass(frozen=True)
class Schedule:
    """How batches are drawn: Poisson (rate ``q``) or shuffled epochs (``q is None``)."""

    n: int
    batch_size: int
    epochs: int
    q: float | None
    steps: int

    @classmethod
    def create(cls, n: int, batch_size: int, epochs: int, shuffled: bool) -> Schedule:
        if shuffled:
            return cls(n, batch_size, epochs, None, code_steps(n, batch_size, epochs))
        q = min(1.0, batch_size / n)
        return cls(n, batch_size, epochs, q, math.ceil(epochs / q))

    @property
    def batch(self) -> float:
        """The batch size m of Alg. 1: the expected qn (Poisson) or the shuffled batches'
        nominal size (an epoch's last batch may be smaller)."""
        return self.q * self.n if self.q is not None else float(self.batch_size)

    def batches(self, generators: Sequence[torch.Generator], device: torch.device,
                members: Members | None = None
                ) -> Iterator[tuple[torch.Tensor, torch.Tensor, float]]:
        """``(index (R, B), mask (R, B), divisor)`` per step; the divisor turns sums into the
        averaged gradients (the expected batch size qn, or the shuffled batch's size). Shadow
        runs sample their ``members`` only (n: the plans'; the sampler draws from the pool
        where membership is independent)."""
        domain, _ = sample_sizes(members, self.n)
        if self.q is not None:
            for _ in range(self.steps):
                index, mask = poisson_batches(domain, self.q, generators, device=device)
                yield *to_rows(index, mask, members), self.batch
            return
        if domain != self.n:
            raise ValueError("DP-FERMI's shuffled batches (code_faithful) train shadows on "
                             "fixed-size member sets only (shadow_membership: fixed_size)")
        for _ in range(self.epochs):
            for index in shuffled_batches(self.n, self.batch_size, generators, device=device):
                mask = torch.ones_like(index, dtype=torch.bool)
                yield *to_rows(index, mask, members), float(index.shape[1])


class DpFermi(Method):
    """DP-FERMI (Algorithm 1) for logistic regression (binary or multinomial) or a network
    (``model``: an architecture of :mod:`dpminimax.models.network`, image data), demographic
    parity or equalized odds, any number of sensitive groups."""

    name: ClassVar[str] = "dpfermi"
    label: ClassVar[str] = "DP-FERMI"
    paper: ClassVar[str] = "dpfermi"
    source: ClassVar[str] = "paper 001 (DP-FERMI), Alg. 1"
    private: ClassVar[bool] = True
    shadowable: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {
        "lam": 0.5,
        "lr": 0.005,
        "lr_w": 0.01,
        "batch_size": 1024,
        "epochs": 200,
        "fairness": "demographic_parity",
        "w_radius": 5.0,
        "clip": 5.0,
        "clip_w": 5.0,
        "count_noise": 50.0,
        "privacy": "example",
        "code_faithful": False,
        "accountant": "rdp",
        "model": "logistic_regression",
    }
    checks: ClassVar[dict[str, Check]] = {
        "lam": NON_NEGATIVE, "lr": NON_NEGATIVE, "lr_w": POSITIVE, "batch_size": COUNT,
        "epochs": COUNT, "fairness": one_of(*FAIRNESS), "w_radius": POSITIVE, "clip": CLIP,
        "clip_w": CLIP, "count_noise": NON_NEGATIVE,
        "privacy": one_of("example", "sensitive_attribute"), "code_faithful": FLAG,
        "accountant": ACCOUNTANT, "model": MODEL}
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED

    def program(self, data: PreparedDataset, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> FermiProgram:
        """:class:`FermiProgram` on the job's batch schedule (Poisson or, code v1, shuffled)."""
        members = member_rows([run.shadow for run in runs], data, device)
        _, n = sample_sizes(members, len(data.y_train))
        schedule = Schedule.create(n, int(shared["batch_size"]), int(shared["epochs"]),
                                   bool(shared["code_faithful"]))
        counts = (group_counts(data, shared["fairness"])[None] if members is None else
                  np.stack([group_counts(data, shared["fairness"], rows)
                            for rows in members.row_sets()]))
        return FermiProgram(data, [run.seed for run in runs], resolved, plans, counts, schedule,
                            privacy=shared["privacy"], faithful=bool(shared["code_faithful"]),
                            device=device, members=members)

    def build(self, data: PreparedDataset, runs: Sequence[RunSpec], device: torch.device):
        """``(program, batches, plans, resolved params, schedule)`` of ``runs``: the batched
        program, its iterator of ``(index, mask, divisor)`` batches (what :meth:`FermiProgram.
        step` draws from) and every run's privacy plan, for tests and the Table 2 benchmark
        that time or inspect single steps."""
        resolved, shared, plans = self.plan_runs(data, runs)
        program = self.program(data, runs, resolved, shared, plans, device)
        return program, program.batches, plans, resolved, program.schedule

    def preflight(self, data: PreparedDataset, runs: Sequence[RunSpec]) -> None:
        """Plan every run's noise on ``data`` (raises where the plan is infeasible)."""
        self.plan_runs(data, runs)

    def plan_reads_data(self, shared: Mapping[str, Any]) -> bool:
        """Thm. 3.3's plan (sensitive-attribute mode) reads the training set's group counts."""
        return shared["privacy"] == "sensitive_attribute"

    def check_data(self, data: PreparedDataset, shared: dict[str, Any]) -> None:
        """What the privacy modes need of the data and the model (:meth:`plan` checks the
        modes themselves)."""
        if shared.get("code_faithful"):
            require_binary_labels(data, f"{self.name} (code_faithful)")
        if shared.get("privacy") == "sensitive_attribute" and (
                shared["model"] != "logistic_regression" or data.kind != "tabular"):
            raise ValueError(
                f"method {self.name!r}: privacy='sensitive_attribute' (Thm. 3.3) clips the "
                "s-dependent gradient part by its closed-form norm for logistic regression on "
                "tabular data only; use privacy='example' (method 'dpfermi') for networks")

    def shadow_sample_size(self, runs: Sequence[RunSpec], pool: int) -> int:
        """Shadow runs in example mode only: Thm. 3.3's plan reads the whole training set's
        group counts, not a shadow's member rows."""
        size = super().shadow_sample_size(runs, pool)
        if any(self.resolve(run.params)["privacy"] == "sensitive_attribute" for run in runs):
            raise ValueError(f"method {self.name!r}: shadow models train in privacy='example' "
                             "mode only (the sensitive-attribute plan reads the training set's "
                             "group counts)")
        return size

    def _check_modes(self, params: dict[str, Any]) -> None:
        """Code v1 runs only under the paper's sensitive-attribute claim."""
        if params["code_faithful"] and params["privacy"] != "sensitive_attribute":
            raise ValueError(
                "code_faithful=True reproduces the released DP-FERMI code (whole-batch theta "
                "clipping, theta noise not scaled by lambda, shuffled batches, non-private P_S), "
                "which is not example-level DP: use it only with privacy='sensitive_attribute'")

    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """The releases of ``run`` on ``n`` training rows (:func:`fermi_releases`) and its
        record. Example mode: the counts with noise ``count_noise``, then T Poisson(q) rounds
        of the clipped theta and W sums with one sigma calibrated so that the event DERIVED
        from these releases is (epsilon, delta)-DP (the non-private twin: no noise, exact P_S,
        unclipped sums). Sensitive-attribute mode needs ``data`` (rho from its group counts):
        see :meth:`_paper_plan`."""
        params = self.resolve(run.params)
        self._check_modes(params)
        schedule = Schedule.create(n, int(params["batch_size"]), int(params["epochs"]),
                                   bool(params["code_faithful"]))
        if params["privacy"] == "sensitive_attribute":
            if data is None:
                raise ValueError("privacy='sensitive_attribute' plans Thm. 3.3's noise from the "
                                 "training set's group counts: pass its data (dpminimax account: "
                                 "--data DIR)")
            return self._paper_plan(run, params, data, schedule)
        q, steps = schedule.q, schedule.steps
        count_noise, sigma = self.calibrate(
            run, lambda: self._example_noise(run, params, schedule), (0.0, 0.0))
        releases = example_releases(q, steps, count_noise, sigma, float(params["clip"]),
                                    float(params["clip_w"]))
        return RunPlan.account(
            releases, {"steps": steps, "sampling_rate": q, "noise_multiplier": sigma},
            run.delta, params["accountant"], notion=EXAMPLE_NOTION, noise_multiplier=sigma,
            count_noise=count_noise, sampling="poisson", sampling_rate=q, steps=steps)

    @staticmethod
    def _example_noise(run: RunSpec, params: dict[str, Any], schedule: Schedule
                       ) -> tuple[float, float]:
        """``(count_noise, sigma)`` of example mode: the counts' noise as set, the gradients'
        sigma calibrated so that the whole run meets the target."""
        count_noise, accountant = float(params["count_noise"]), params["accountant"]
        if not count_noise > 0:
            raise ValueError(f"count_noise must be > 0 in example mode, got {count_noise}")
        counts = Release("group_counts", "gaussian", count_noise, 1.0)
        count_epsilon = epsilon(counts.event(), run.delta, accountant)
        if count_epsilon >= run.epsilon:
            raise ValueError(
                f"the group-count release alone (count_noise={count_noise}) has epsilon "
                f"{count_epsilon:.4g} >= target {run.epsilon}; increase count_noise")
        return count_noise, _calibrated_sigma(schedule.q, schedule.steps, count_noise,
                                              run.epsilon, run.delta, accountant)

    def _paper_plan(self, run: RunSpec, params: dict[str, Any], data: PreparedDataset,
                    schedule: Schedule) -> RunPlan:
        """Thm. 3.3's closed-form sigma_w, sigma_theta = L D sigma_w (stds on the averaged
        gradients) as releases: one s_i moves the averaged W-gradient by <= sqrt(8 / rho) / m
        and the theta one by L D times that (proof of Thm. D.2), so both releases have the
        multiplier sigma_w m / sqrt(8 / rho) (= (m/n) sqrt(2 T ln(1/delta)) / epsilon, Abadi
        et al. 2016, Thm. 1); they release the lam-weighted sums or, code v1,
        the batch means, its theta's not scaled by lam. P_S is exact (not noised). The record
        is the theorem's, with its conditions, not the releases' event (under add/remove the
        exact P_S is not private)."""
        faithful, lam = bool(params["code_faithful"]), float(params["lam"])
        counts = group_counts(data, params["fairness"])
        eo = params["fairness"] == "equalized_odds"
        marginal = counts.sum(axis=0)
        rho = (min(code_rho(row) for row in counts) if eo and not faithful
               else code_rho(marginal))
        n, m, steps = schedule.n, schedule.batch_size, schedule.steps
        lipschitz, bound = float(params["clip"]), float(params["w_radius"])
        sigma_w = theorem_3_3_sigma_w(run.epsilon, run.delta, n, steps, rho)
        sigma_theta = theorem_3_3_sigma_theta(run.epsilon, run.delta, n, steps, rho,
                                              lipschitz, bound)
        conditions = theorem_3_3_conditions(run.epsilon, run.delta, n, m, steps)
        if faithful:
            x_norm = float(np.sqrt((data.x_train.astype(np.float64) ** 2).sum(axis=1) + 1).max())
            conditions.update(
                lipschitz_holds_on_data=x_norm / 4.0 <= lipschitz,
                theta_noise_covers_lambda=lam <= 1.0,
                full_batches=n % m == 0,
            )
            if eo:
                conditions.update(
                    batch_means_over_m=False,
                    rho_covers_conditional_groups=rho <= min(code_rho(row) for row in counts),
                )
        else:
            conditions["clip_within_theorem_sensitivity"] = bound >= math.sqrt(rho / 2.0)
        # the averaged W-gradient's s-sensitivity; the releases are of sums (m times the
        # averages) or, code v1, of means
        averaged = math.sqrt(8.0 / rho) / schedule.batch
        released = averaged * (1.0 if faithful else schedule.batch)
        theta = _theorem_release("theta_gradient", sigma_w / averaged,
                                 (1.0 if faithful else lam) * lipschitz * bound * released,
                                 lipschitz)
        w = _theorem_release("w_gradient", sigma_w / averaged, lam * released)
        unamplified = membership_visible_epsilon(theta, w, schedule, run.delta,
                                                 params["accountant"])
        record = {
            "epsilon": run.epsilon, "delta": run.delta, "accountant": "paper_theorem_3_3",
            "neighboring_relation": "replace_one_sensitive_attribute",
            "method": "closed_form", "event": None, "notion": SENSITIVE_NOTION,
            "sigma_theta": sigma_theta, "sigma_w": sigma_w, "rho": rho, "n": n,
            "batch_size": m, "steps": steps, "lipschitz": lipschitz, "w_bound": bound,
            "sampling": "shuffled" if faithful else "poisson",
            "theta_noise_scaled_by_lambda": not faithful, "w_noise_scaled_by_lambda": True,
            "conditions": conditions, "guarantee_covered": False,
            "guarantee_not_covered": [f"{name} fails" for name, holds in conditions.items()
                                      if not holds] + THEOREM_3_3_GAPS,
            "epsilon_without_amplification": unamplified,
            "caveats": _caveats(faithful, eo),
        }
        releases = fermi_releases(Release("group_counts", "gaussian", 0.0, 1.0), theta, w,
                                  steps, schedule.q)
        return RunPlan(releases, {"steps": steps, "sampling_rate": schedule.q,
                                  "sigma_theta": sigma_theta, "sigma_w": sigma_w, "rho": rho},
                       record)


class DpFermiPaper(DpFermi):
    """DP-FERMI with the paper's own privacy claim: the closed-form noise of Thm. 3.3
    (sensitive-attribute DP, ``privacy="sensitive_attribute"``). A separate method name so that
    figures show it beside the example-level :class:`DpFermi`; everything else is shared."""

    name: ClassVar[str] = "dpfermi_paper"
    shadowable: ClassVar[bool] = False  # Thm. 3.3's plan reads all group counts
    label: ClassVar[str] = "DP-FERMI (Thm. 3.3, sensitive-attribute DP)"
    parameters: ClassVar[dict[str, Any]] = {**DpFermi.parameters,
                                            "privacy": "sensitive_attribute"}


class DpFermiCode(DpFermi):
    """DP-FERMI as the released code v1 runs it (``code_faithful=True``), under the
    paper's Thm. 3.3 noise: for matching the plotted curves, not a sound example-level method."""

    name: ClassVar[str] = "dpfermi_code"
    shadowable: ClassVar[bool] = False  # Thm. 3.3's plan reads all group counts
    label: ClassVar[str] = "DP-FERMI (released code v1)"
    parameters: ClassVar[dict[str, Any]] = {**DpFermi.parameters,
                                            "privacy": "sensitive_attribute",
                                            "code_faithful": True}


NonPrivateFermi = nonprivate_twin(
    DpFermi, "NonPrivateFermi", name="dpfermi_nonprivate", label="Non-private FERMI",
    doc="The same descent-ascent without clipping or noise (exact P_S, Poisson batches, "
        "W0 = 0); epsilon must be inf.",
    fixed={"clip": math.inf, "clip_w": math.inf, "count_noise": 0.0, "privacy": "none",
           "code_faithful": False, "accountant": "rdp"})


def membership_visible_epsilon(theta: Release, w: Release, schedule: Schedule, delta: float,
                               accountant: str) -> float:
    """An upper bound on Alg. 1's epsilon for one s_i when batch membership is visible (no
    amplification), still ignoring the exact P_S: s_i moves only the steps that sample i, at
    most k of them except with probability delta / 2 (k = the Binomial(T, q) tail quantile;
    shuffled epochs: one per epoch), each a Gaussian release of theta and W together; the k-fold
    composition is accounted at delta / 2; a release without noise (sensitivity 0 at lam = 0)
    does not depend on s."""
    if schedule.q is None:
        sampled = schedule.epochs
    else:
        sampled = min(schedule.steps, int(binom.isf(delta / 2, schedule.steps, schedule.q)) + 1)
    noised = tuple(release for release in (theta, w) if release.private)
    if not noised:  # lam = 0: nothing released depends on s
        return 0.0
    return epsilon(plan_event(Batch(noised, count=sampled)), delta / 2, accountant)


#: Why Thm. 3.3's (epsilon, delta) does not hold for Alg. 1 as stated (issue #18), whatever the
#: run: its proof's steps that fail.
THEOREM_3_3_GAPS = [
    "no subsampling amplification: only the s-dependent part of each theta gradient is "
    "clipped; the s-independent rest (loss gradient, the W^T W term) is unclipped and present "
    "only when example i is sampled, so with public x_i the batch membership is visible and the "
    "amplification the proof takes from Abadi et al. 2016, Thm. 1 is not available; "
    "epsilon_without_amplification bounds what the same noise gives without it "
    "(membership_visible_epsilon)",
    "P_S^{-1/2} is exact, computed from every training s_i, and enters every step: changing "
    "one s_i moves all examples' terms, which the sensitivity bound ignores (and so does "
    "epsilon_without_amplification)",
    "theta and W are each calibrated to the full (epsilon, delta) though both are released at "
    "every step",
]


def _caveats(faithful: bool, eo: bool) -> list[str]:
    """What Thm. 3.3's closed form does not cover here (its conditions; the code's shuffling)."""
    caveats = [
        "only the sensitive attribute is protected: x and y are treated as public "
        "(not example-level DP)",
        "closed-form calibration (Thm. 3.3 via Abadi et al. 2016, Thm. 1, constants as stated "
        "in the paper); no accountant was run on this mechanism",
        "the theta and W releases are each calibrated to the full (epsilon, delta) although "
        "both are released every step; jointly they are a Gaussian mechanism with sqrt(2) "
        "larger normalised sensitivity (a strict accounting doubles both variances)",
        "P_S^{-1/2} is computed without noise from all training sensitive attributes "
        "(Alg. 1 line 2); changing one s_i changes every example's psi term through it, which "
        "the theorem's sensitivity bound ignores",
    ]
    if faithful:
        caveats.append(
            "shuffled fixed-size batches (each example once per epoch, last partial batch "
            "kept) although the moments accountant assumes random subsampling")
    if eo:
        caveats.append(
            "Thm. 3.3 is stated for demographic parity; equalized odds uses one W per label "
            "with P_{S|Y=y}" + (", rho from P_S and unweighted per-label batch-subset means "
                                "(code v1)" if faithful
                                else ", rho = the smallest conditional group share"))
    return caveats


def group_counts(data: PreparedDataset, fairness: str,
                 rows: np.ndarray | None = None) -> np.ndarray:
    """Training counts (C, k) per conditioning cell (C = 1 for demographic parity, one row per
    label for equalized odds) and sensitive group, of the training ``rows`` (default: all)."""
    groups = len(data.group_names)
    y, s = (data.y_train, data.s_train) if rows is None else (data.y_train[rows],
                                                              data.s_train[rows])
    cells = y if fairness == "equalized_odds" else np.zeros_like(y)
    count = len(data.label_names) if fairness == "equalized_odds" else 1
    return np.bincount(cells * groups + s, minlength=count * groups).reshape(count, groups)


def _theorem_release(name: str, multiplier: float, sensitivity: float,
                     clip: float | None = None) -> Release:
    """A release of Thm. 3.3's noise (``clip``: the bound L of the s-dependent gradient part
    its sensitivity rests on); at lam = 0 (sensitivity 0) the sum does not depend on s and is
    released without noise."""
    if sensitivity == 0.0:
        return Release(name, "gaussian", 0.0, math.inf, clip)
    return Release(name, "gaussian", multiplier, sensitivity, clip)


@functools.lru_cache(maxsize=256)
def _calibrated_sigma(q: float, steps: int, count_noise: float, target: float, delta: float,
                      accountant: str) -> float:
    """Smallest sigma with which :func:`example_releases` meet (target, delta)."""
    return calibrate_release_parameter(
        lambda sigma: example_releases(q, steps, count_noise, sigma, 1.0, 1.0), target, delta,
        accountant)


class FermiProgram:
    """State (theta, W) and random streams of R DP-FERMI runs; :meth:`step` is Algorithm 1's
    loop body (lines 4-6) for all of them, in the mode the plans describe. Every noise it adds
    is one of the plans' releases (:data:`RELEASES`, one
    :class:`~dpminimax.privacy.release.BatchedRelease` each): P_S's counts, the theta- and
    W-gradient sums (code v1: batch means).

    Binary logistic regression on the CPU computes both gradient sums in one compiled pass
    (:mod:`dpminimax.algorithms.fair.dpfermi_compiled`; code v1 through :meth:`_kernel_w`);
    multinomial logistic regression, networks, code v1's equalized odds (per-label batch
    weights) and other devices take the torch path below, which the tests hold the compiled one
    to."""

    def __init__(self, data: PreparedDataset, seeds: Sequence[int],
                 params: Sequence[dict[str, Any]], plans: Sequence[RunPlan], counts: np.ndarray,
                 schedule: Schedule, *, privacy: str, faithful: bool,
                 device: torch.device, members: Members | None = None) -> None:
        runs = len(seeds)
        self.schedule, self.steps = schedule, schedule.steps
        self.batches = schedule.batches(
            [make_generator(seed, "shuffle" if schedule.q is None else "poisson", device)
             for seed in seeds], device, members)
        self.privacy, self.faithful = privacy, faithful
        self.eo = params[0]["fairness"] == "equalized_odds"
        self.classes = max(2, len(data.label_names))
        self.model = batched_model(data, params[0]["model"],
                                   1 if self.classes == 2 else self.classes)
        self.state = self.model.init_state(runs, device, seeds)
        # logistic regression with binary labels takes the compiled step
        self.linear = isinstance(self.model, BatchedLogisticRegression)
        self.compiled = self.linear and self.classes == 2 and not (faithful and self.eo)
        self.rows = training_rows(data, device)
        # labels, attributes, cells: one copy, compact codes (the compiled step reads them)
        self.y, self.s = (compact_codes(torch.as_tensor(v, device=device))
                          for v in (data.y_train, data.s_train))
        self.cells = self.y if self.eo else torch.zeros_like(self.y)
        self.groups = counts.shape[-1]
        if self.linear:   # ||[x, 1]||: the linear model's per-example gradient scale
            self.x_norm = torch.sqrt(self.rows.norms() ** 2 + 1.0)
        # code v1 clips the batch-mean gradient instead (:meth:`_descend`)
        self.clip_mode = CLIP_NONE if faithful else {
            "example": CLIP_EXAMPLE, "sensitive_attribute": CLIP_SENSITIVE}.get(privacy,
                                                                               CLIP_NONE)

        def per_run(values) -> torch.Tensor:
            return torch.tensor([float(v) for v in values], device=device)

        self.count_release, self.theta_release, self.w_release = (
            BatchedRelease([plan.release(name) for plan in plans], device) for name in RELEASES)
        self.lam, self.lr, self.lr_w, self.radius = (per_run(p[k] for p in params)
                                                     for k in ("lam", "lr", "lr_w", "w_radius"))
        # example mode clips each example's gradients to its releases' sensitivities; Thm. 3.3
        # clips the s-dependent part to L (code v1: the batch mean), the theta release's clip;
        # clip_w: example mode only
        self.clip, self.clip_w = self.theta_release.clip, self.w_release.clip
        self.noise = [make_generator(seed, "noise", device) for seed in seeds]
        self.noise_w = [make_generator(seed, "noise_w", device) for seed in seeds]
        self.dropout = [make_generator(seed, "dropout", device) for seed in seeds]
        self.p_s = self._proportions(counts, seeds, device)
        # code v1: F = [p] and only group 0's column of s (a 1 x 1 W); otherwise F = softmax
        self.columns = 1 if faithful else self.groups
        shape = (runs, counts.shape[-2], self.columns, 1 if faithful else self.classes)
        if faithful:
            init = [torch.randn(shape[1:], generator=make_generator(seed, "w_init", device),
                                device=device) for seed in seeds]
            self.w = self._project(torch.stack(init))
        else:
            self.w = torch.zeros(shape, device=device)

    def _proportions(self, counts: np.ndarray, seeds: Sequence[int],
                     device: torch.device) -> torch.Tensor:
        """P_S per cell (R, C, k) from the counts' release (Alg. 1 line 2; exact where it is
        not noised), floored at 1 before normalising; ``counts`` (1 or R, C, k): one table for
        every run, or each shadow run's own."""
        exact = torch.as_tensor(counts, dtype=torch.float32, device=device).flatten(1)
        noisy = self.count_release.perturb(
            exact.expand(len(seeds), -1).clone(),
            [make_generator(seed, "group_counts", device) for seed in seeds])
        noisy = torch.clamp(noisy, min=1.0).view(len(seeds), *counts.shape[1:])
        return noisy / noisy.sum(dim=-1, keepdim=True)

    def _project(self, w: torch.Tensor) -> torch.Tensor:
        """Pi_W: each W (one per cell) onto the Frobenius ball of radius ``w_radius``."""
        norms = torch.linalg.vector_norm(w, dim=(-2, -1))
        return clip_scaled(w, norms, self.radius)

    def step(self) -> None:
        """Alg. 1 lines 4-6 on the schedule's next batch."""
        self.step_on(*next(self.batches))

    def step_on(self, index: torch.Tensor, mask: torch.Tensor, divisor: float) -> None:
        """Alg. 1 lines 4-6 on the batch ``index`` (R, B) / ``mask``: the theta residuals from
        this forward pass (:meth:`_residual`), the (clipped) W weights, then both updates from
        (theta_t, W_t); ``divisor`` turns sums into averages."""
        x = self.rows.take(index)
        if self.compiled and sparse_rows_supported(x, self.state["weight"],
                                                 self.state["bias"], self.w, self.p_s):
            self._compiled_step(x, mask, divisor)
            return
        y, s, cells = (batch_values(t, index).long() for t in (self.y, self.s, self.cells))
        attributes = F.one_hot(s, self.groups)[..., :self.columns].to(torch.float32)
        members = [cells == cell for cell in range(self.w.shape[1])]
        weights = self.lam.view(-1, 1) * self._cell_weights(cells, mask, divisor)  # (R, B)
        released: dict[str, torch.Tensor] = {}

        def residual(outputs: torch.Tensor) -> torch.Tensor:
            return self._residual(outputs, y, attributes, members, weights, index, released)

        self._theta_step(x, mask, divisor, residual)
        probs = released["probs"]
        w_weights = weights * mask.to(weights.dtype)
        if self.privacy == "example":                             # clip lam grad_W psi_i
            norms, = self._per_cell(
                members, lambda w, p_s: (psi_grad_w_norms(probs, attributes, w, p_s),))
            w_weights = clip_scaled(w_weights, w_weights.abs() * norms, self.clip_w)
        self._w_step(torch.stack([
            psi_grad_w(probs, attributes, self.w[:, cell], self.p_s[:, cell, :self.columns],
                       w_weights * member.to(w_weights.dtype))
            for cell, member in enumerate(members)], dim=1), divisor)  # (R, C, k, l)

    def _compiled_step(self, x: IndexedRows, mask: torch.Tensor, divisor: float) -> None:
        """:meth:`step` for binary logistic regression on the CPU: both gradient sums in one
        compiled pass (:mod:`dpminimax.algorithms.fair.dpfermi_compiled`), then the same noise and
        updates."""
        sums = fermi_sums(x, self.x_norm, mask, self.y, self.s, self.cells, self.state,
                          self._kernel_w(), self.p_s, self.lam, self.clip, self.clip_w,
                          self.clip_mode)
        self._descend(sums.weight, sums.bias, divisor)
        self._w_step(sums.w[:, :, :1, 1:] if self.faithful else sums.w, divisor)

    def _kernel_w(self) -> torch.Tensor:
        """W in the compiled sums' form (R, C, k, 2). Code v1's 1 x 1 W (F = [p], group 0's
        column of s) is the full-form W whose only non-zero entry is (group 0, class 1):
        dpsi/dF_0 is then 0 and only group 0's examples have an s-dependent part, exactly code
        v1's terms; of the W-gradient sums only that entry, ``[:, :, :1, 1:]``, is code v1's."""
        if not self.faithful:
            return self.w
        embedded = self.w.new_zeros(*self.w.shape[:2], self.groups, 2)
        embedded[:, :, :1, 1:] = self.w
        return embedded

    def _w_step(self, grad_w: torch.Tensor, divisor: float) -> None:
        """Alg. 1 line 6: the W release of the gradient sum (R, C, k, l) (code v1: of the batch
        mean), ascent, projection."""
        if self.faithful:
            grad_w, divisor = grad_w / divisor, 1.0
        noisy = self.w_release.perturb(grad_w, self.noise_w)
        self.w = self._project(self.w + (self.lr_w / divisor).view(-1, 1, 1, 1) * noisy)

    def _residual(self, outputs: torch.Tensor, y: torch.Tensor, attributes: torch.Tensor,
                  members: Sequence[torch.Tensor], weights: torch.Tensor, index: torch.Tensor,
                  released: dict[str, torch.Tensor]) -> torch.Tensor:
        """d(l_i + lam psi_i)/d(outputs_i) (R, B, O) of the model's outputs (one logit z for
        binary logistic regression, read as the class logits [0, z]; else K logits).

        With F = softmax(logits) and c = dpsi/dF split into its s-independent and s-dependent
        parts (:func:`~dpminimax.algorithms.fair.ermi.psi_grad_f_parts`), the chain rule through the
        softmax gives ``F_m (c_m - sum_j c_j F_j)`` per logit m (binary: ``p (1 - p)
        (c_1 - c_0)``); the cross-entropy adds ``F - onehot(y)``. Code v1's F = [p] is c = [0,
        c]. Stores the F that psi uses in ``released["probs"]`` for the W step."""
        logits = outputs if outputs.shape[-1] > 1 else torch.cat(
            [torch.zeros_like(outputs), outputs], dim=-1)
        probs = row_softmax(logits)
        released["probs"] = probs[..., 1:] if self.faithful else probs
        independent, sensitive = self._per_cell(
            members, lambda w, p_s: psi_grad_f_parts(attributes, w, p_s))
        if self.faithful:
            independent, sensitive = (F.pad(c, (1, 0)) for c in (independent, sensitive))

        def through_softmax(c: torch.Tensor) -> torch.Tensor:
            return probs * (c - (c * probs).sum(dim=-1, keepdim=True))

        fair_independent, fair_sensitive = (through_softmax(c)[..., -outputs.shape[-1]:]
                                            for c in (independent, sensitive))
        if self.privacy == "sensitive_attribute" and not self.faithful:  # clip, see module doc
            norms = (torch.linalg.vector_norm(fair_sensitive, dim=-1)
                     * batch_values(self.x_norm, index))
            fair_sensitive = clip_scaled(fair_sensitive, norms, self.clip)
        loss = probs - F.one_hot(y, probs.shape[-1]).to(probs.dtype)
        return loss[..., -outputs.shape[-1]:] + weights.unsqueeze(-1) * (
            fair_independent + fair_sensitive)

    def _per_cell(self, members: Sequence[torch.Tensor], compute) -> tuple[torch.Tensor, ...]:
        """``compute(W_c, P_c)`` for every cell c, each example taking its own cell's values
        (one cell for demographic parity; the example's label for equalized odds)."""
        outputs = compute(self.w[:, 0], self.p_s[:, 0, :self.columns])
        for cell in range(1, len(members)):
            other = compute(self.w[:, cell], self.p_s[:, cell, :self.columns])
            outputs = tuple(
                torch.where(members[cell].view(*members[cell].shape, *[1] * (o.dim() - 2)),
                            b, o) for o, b in zip(outputs, other, strict=True))
        return outputs

    def _cell_weights(self, cells: torch.Tensor, mask: torch.Tensor,
                      divisor: float) -> torch.Tensor:
        """Weight of each example's psi in the averaged gradient, relative to 1/divisor: 1
        (eq. 5 / demographic parity), or divisor / |B_y| for code v1's unweighted sum of
        per-label batch-subset means (equalized odds)."""
        if not (self.faithful and self.eo):
            return torch.ones_like(cells, dtype=torch.float32)
        sizes = (F.one_hot(cells, self.w.shape[1]) * mask.unsqueeze(-1)).sum(dim=1)  # (R, C)
        return divisor / sizes.gather(1, cells).to(torch.float32)

    def _theta_step(self, x: torch.Tensor | IndexedRows, mask: torch.Tensor, divisor: float,
                    residual: Callable[[torch.Tensor], torch.Tensor]) -> None:
        """Alg. 1 line 5 through the model: the theta release of the per-example gradients
        clipped to its sensitivity (example mode; none without privacy), descent. In
        sensitive-attribute mode (logistic regression) the s-dependent part was clipped in
        ``residual`` and :meth:`_descend` releases the unclipped sums."""
        if self.privacy != "sensitive_attribute":
            self.model.private_step(self.state, x, mask, residual, release=self.theta_release,
                                    generators=self.noise, step_size=self.lr / divisor,
                                    dropout_streams=self.dropout)
            return
        outputs = linear_logits(self.state["weight"], self.state["bias"], x)
        self._descend(*clipped_outer_sum(residual(outputs), x, mask,
                                         torch.full_like(self.clip, math.inf)), divisor)

    def _descend(self, grad_w: torch.Tensor, grad_b: torch.Tensor, divisor: float) -> None:
        """Alg. 1 line 5 from theta's gradient sums: the theta release, descent. Code v1
        releases the batch mean clipped to L instead."""
        sums, step_size = {"weight": grad_w, "bias": grad_b}, self.lr / divisor
        if self.faithful:
            sums = clip_each_run({k: v / divisor for k, v in sums.items()}, self.clip)
            step_size = self.lr
        noisy_linear_descent(self.state, sums, release=self.theta_release,
                             generators=self.noise, step_size=step_size)
