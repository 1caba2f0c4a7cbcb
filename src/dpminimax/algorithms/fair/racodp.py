"""RaCO-DP: private rate-constrained optimisation (RaCO-DP paper, Algorithm 1).

Stochastic gradient descent-ascent on the Lagrangian ``l(theta) + sum_j lambda_j (Gamma_j(theta)
- gamma_j)`` of generalized rate constraints (eq. 6), for R runs at once. Each step, on one Poisson
batch (rate q, expected size B = qn):

1. a noisy histogram ``H_hat[q, k] = sum_{x in batch, cell(x) = q} softmax(tau h(x))_k + noise``
   over the global partition (eq. 8-9; l1 and l2 sensitivity 1: an example adds one probability
   vector to one row). Noise: Laplace of scale ``histogram_scale`` (the paper's Lap(1/b)) or
   Gaussian of std ``histogram_scale`` (a variant);
2. per-example gradients of ``CE(h(x), y) + B * sum_k w_x[k] softmax(tau h(x))_k`` with the
   constraint weights ``w_x[k] = sum_j lambda_j sum_{l: cell(x) in I_jl} alpha_jlk / N_hat_jl``
   and ``N_hat_jl = max(1, sum_{q in I_jl} sum_k H_hat[q, k])`` (eq. 10, post-processed from H_hat;
   our guard, as in the released code), clipped to C, summed, plus N(0, (sigma C)^2 I), divided by
   B;
3. projected dual ascent ``lambda <- max(0, lambda + eta_lambda (Gamma_post(H_hat) - gamma))``
   (eq. 11-12), post-processing of the histogram ("soft"), or of the histogram of arg-max
   predictions with the same noise draw ("hard", App. E.4). The hard histogram has the same
   row totals as the soft one (an example adds mass 1 to its cell in both) and the weights of
   step 2 depend only on row totals, so with "hard" the whole step is a function of the hard
   release and the gradient release: the one accounted Laplace release still covers it.

Privacy: the histogram and the gradient are released from the SAME Poisson batch, so each step is
``PoissonSampled(q, Composed([Gaussian(sigma), Laplace(b)]))`` (docs/architecture.md); T is the
largest step count (<= ``max_steps``) whose epsilon is within the target. The paper's released
accounting (separately sampled PLDs, as the released code does) is recorded beside it. Choices:
plain (untempered) cross-entropy, tempered softmax (exp(+tau z): the paper's exp(-tau z) is a
sign typo) inside the constraints only; no clipping of the dual gradient (the released code clips
constraint values).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F

from dpminimax.algorithms.base import (
    FitResult,
    Method,
    RunPlan,
    RunSpec,
    nonprivate_twin,
    per_run,
)
from dpminimax.algorithms.params import (
    ACCOUNTANT,
    CLIP,
    COUNT,
    MODEL,
    NON_NEGATIVE,
    POSITIVE,
    Check,
    one_of,
)
from dpminimax.constraints import RateConstraintSet, build_constraints
from dpminimax.data import PreparedDataset
from dpminimax.data.inputs import split_inputs, training_rows
from dpminimax.kernels.gather import batch_values
from dpminimax.kernels.grouped import grouped_sums
from dpminimax.kernels.membership import Members, member_rows, sample_sizes, to_rows
from dpminimax.kernels.rowwise import row_softmax
from dpminimax.kernels.sampling import expected_batch_size, poisson_batches
from dpminimax.models.batched import BatchedLogisticRegression
from dpminimax.models.network import BatchedNetwork, batched_model
from dpminimax.privacy import epsilon
from dpminimax.privacy.calibrate import calibrate_release_parameter
from dpminimax.privacy.release import Batch, BatchedRelease, Release, Repeat, plan_event
from dpminimax.seeding import make_generator
from dpminimax.tasks.classification import majority_class
from dpminimax.trivial import column

#: Parameters fixing the constraint set, the noise family or the accountant: one value per
#: batched program (batch size, noise scales and hence step counts may differ between runs).
SHARED = ("max_steps", "accountant", "constraint", "histogram_noise", "model")


def racodp_releases(q: float, mechanism: tuple, clip: float, steps: int) -> Batch:
    """T rounds of Alg. 1's two releases on one Poisson(q) batch: the clipped gradient sum
    (Gaussian, l2 sensitivity C, multiplier sigma) and the histogram (Laplace or Gaussian of
    scale b; an example adds one probability vector to one row: l1 and l2 sensitivity 1).
    ``mechanism`` is ``(sigma, b, histogram_noise)``; sigma = b = 0 is the non-private SGDA."""
    sigma, scale, histogram_noise = mechanism
    if histogram_noise not in ("laplace", "gaussian"):
        raise ValueError(f"histogram_noise must be 'laplace' or 'gaussian', got "
                         f"{histogram_noise!r}")
    return Batch((Release("gradient", "gaussian", float(sigma), float(clip)),
                  Release("histogram", histogram_noise, float(scale), 1.0)),
                 count=int(steps), sampling_rate=float(q))


def racodp_event(q: float, noise_multiplier: float, histogram_scale: float,
                 histogram_noise: str, steps: int):
    """The sound event of T RaCO-DP steps (both releases inside one Poisson sampling event),
    derived from :func:`racodp_releases`. The accountant interprets the Laplace case with the
    PLD of the subsampled product pair Lap(1, b) x N(1, sigma^2)
    (:mod:`dpminimax.privacy.pld_product`); two Gaussians merge exactly in dp_accounting."""
    return plan_event(racodp_releases(q, (noise_multiplier, histogram_scale, histogram_noise),
                                      1.0, steps))


def separately_sampled(batch: Batch) -> Repeat:
    """Each release of ``batch`` on its OWN Poisson batch: what the released code accounts
    (the released code's). UNSOUND for releases of one batch; only to report the paper's epsilon."""
    return Repeat(tuple(Batch((release,), batch.count, batch.sampling_rate)
                        for release in batch.releases))


def paper_accounting_event(q: float, noise_multiplier: float, histogram_scale: float,
                           histogram_noise: str, steps: int):
    """The paper's own (separately sampled) event of the same releases."""
    return plan_event(separately_sampled(racodp_releases(
        q, (noise_multiplier, histogram_scale, histogram_noise), 1.0, steps)))


class RacoDp(Method):
    """RaCO-DP (Algorithm 1) for a 2-logit logistic-regression model (tabular data) or a network
    (``model``: an architecture of :mod:`dpminimax.models.network`, for image data)."""

    name: ClassVar[str] = "racodp"
    label: ClassVar[str] = "RaCO-DP"
    paper: ClassVar[str] = "racodp"
    source: ClassVar[str] = "paper 000 (RaCO-DP), Alg. 1"
    private: ClassVar[bool] = True
    shadowable: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {
        "lr": 1.0,
        "lr_dual": 1.0,
        "clip": 1.0,
        "noise_multiplier": 4.0,
        "histogram_scale": 4.0,
        "histogram_noise": "laplace",
        "temperature": 1.0,
        "dual_update": "soft",
        "batch_size": 1024,
        "max_steps": 5000,
        "accountant": "rdp",
        "constraint": "demographic_parity",
        "gamma": 0.05,
        "model": "logistic_regression",
    }
    checks: ClassVar[dict[str, Check]] = {
        "lr": NON_NEGATIVE, "lr_dual": NON_NEGATIVE, "clip": CLIP, "noise_multiplier": NON_NEGATIVE,
        "histogram_scale": NON_NEGATIVE, "histogram_noise": one_of("laplace", "gaussian"),
        "temperature": POSITIVE, "dual_update": one_of("soft", "hard"), "batch_size": COUNT,
        "max_steps": COUNT, "accountant": ACCOUNTANT,
        "constraint": one_of("demographic_parity", "equalized_odds", "false_negative_rate"),
        "gamma": NON_NEGATIVE, "model": MODEL}

    def constraint_set(self, params: dict[str, Any], data: PreparedDataset) -> RateConstraintSet:
        return build_constraints(
            {"kind": params["constraint"], "gamma": params["gamma"]},
            num_groups=len(data.group_names), num_classes=2, group_names=list(data.group_names),
        )

    def training_violation(self, resolved: Sequence[dict[str, Any]], data: PreparedDataset,
                           device: torch.device) -> Callable[[torch.Tensor], torch.Tensor]:
        """max_j (hard Gamma_j - gamma_j) of each run's constraint set on the training set."""
        constraints = [self.constraint_set(params, data) for params in resolved]
        cells = torch.as_tensor(constraints[0].cells(data.y_train, data.s_train), device=device)
        slack = torch.as_tensor(np.stack([c.slack for c in constraints]), dtype=torch.float32,
                                device=device)
        classes = constraints[0].num_classes

        def violation(predicted: torch.Tensor) -> torch.Tensor:
            hard = F.one_hot(predicted, classes).float()
            return (constraints[0].rates(hard, cells) - slack).max(dim=-1).values

        return violation

    shared_parameters: ClassVar[tuple[str, ...]] = SHARED

    def check_data(self, data: PreparedDataset, shared: dict[str, Any]) -> None:
        """The model must suit the data (refused before any planning)."""
        batched_model(data, shared["model"], num_classes=2)

    def program(self, data: PreparedDataset, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> RacoDpProgram:
        """:class:`RacoDpProgram` with every run's constraints and releases."""
        return RacoDpProgram(batched_model(data, shared["model"], num_classes=2), data,
                             [self.constraint_set(p, data) for p in resolved],
                             [run.seed for run in runs], resolved,
                             [plan.releases for plan in plans], device=device,
                             members=member_rows([run.shadow for run in runs], data, device))

    def preflight(self, data: PreparedDataset, runs: Sequence[RunSpec]) -> None:
        """Plan every run's step count on ``data`` (raises where one step exceeds the target)."""
        self.plan_runs(data, runs)

    def plan(self, run: RunSpec, n: int,
             data: PreparedDataset | None = None) -> RunPlan:
        """The run's releases for its largest step count within its target."""
        params = self.resolve(run.params)
        q, mechanism = self.privacy_plan(params, n)
        steps = self.calibrate(run, lambda: self.steps(q, mechanism, run, params),
                               int(params["max_steps"]))
        return self.account(racodp_releases(q, mechanism, params["clip"], steps), run,
                            params["accountant"])

    def extra_metrics(self, fit: FitResult, data: PreparedDataset,
                      device: torch.device) -> list[dict[str, float]]:
        """Largest constraint violation ``max_j Gamma_j - gamma_j`` of the hard predictions on the
        train and test sets (the paper's constraint satisfaction, eq. 6 with hard rates), and the
        same of the trivial baseline, the majority class of the training labels
        (``trivial_<split>_max_constraint_violation``)."""
        rows = []
        majority = majority_class(data)
        for split in ("train", "test"):
            x = split_inputs(data, split, device)
            predicted = fit.model.predict(fit.state, x).cpu().numpy()
            constant = np.full(len(getattr(data, f"y_{split}")), majority)
            for r, params in enumerate(fit.resolved_params):
                constraints = self.constraint_set(params, data)
                cells = constraints.cells(getattr(data, f"y_{split}"), getattr(data, f"s_{split}"))
                if split == "train":
                    rows.append({})
                for name, labels in ((f"{split}_max_constraint_violation", predicted[r]),
                                     (column(f"{split}_max_constraint_violation"), constant)):
                    gap = constraints.rates(np.eye(2)[labels], cells) - constraints.slack
                    rows[r][name] = float(gap.max())
        return rows

    @staticmethod
    def account(releases: Batch, run: RunSpec, accountant: str) -> RunPlan:
        """The plan of ``releases``: the sound record of their event, plus the epsilon the
        paper's own accounting gives for the same noise."""
        paper = epsilon(plan_event(separately_sampled(releases)), run.delta, "pld")
        return RunPlan.account(releases, {"sampling_rate": releases.sampling_rate,
                                          "steps": releases.count},
                               run.delta, accountant, epsilon_paper_accounting=paper)

    @staticmethod
    def privacy_plan(params: dict[str, Any], n: int) -> tuple[float, tuple]:
        """``(q, mechanism)`` of a run with resolved ``params`` on n training rows: its Poisson
        sampling rate and (noise_multiplier, histogram_scale, histogram_noise)."""
        return (min(1.0, params["batch_size"] / n),
                (params["noise_multiplier"], params["histogram_scale"],
                 params["histogram_noise"]))

    def steps(self, q: float, mechanism: tuple, run: RunSpec, shared: dict[str, Any]) -> int:
        """Largest T <= max_steps with epsilon(T) <= target (the paper gives no T)."""
        def releases(steps: float) -> Batch:
            return racodp_releases(q, mechanism, 1.0, int(steps))

        cap = int(shared["max_steps"])
        if epsilon(plan_event(releases(cap)), run.delta, shared["accountant"]) <= run.epsilon:
            return cap
        one_step = epsilon(plan_event(releases(1)), run.delta, shared["accountant"])
        if one_step > run.epsilon:
            raise ValueError(
                f"method {self.name!r}: a single step already spends epsilon {one_step:.4g} > "
                f"target {run.epsilon} (sampling rate q={q:.4g}, delta={run.delta:g}); raise "
                "noise_multiplier or histogram_scale, or lower batch_size")
        return int(calibrate_release_parameter(releases, run.epsilon, run.delta,
                                               shared["accountant"], bracket=(1, cap),
                                               discrete=True))


NonPrivateSgda = nonprivate_twin(
    RacoDp, "NonPrivateSgda", name="racodp_nonprivate", label="Non-private SGDA",
    doc="The same descent-ascent without noise (the paper's non-private SGDA reference): exact "
        "histogram, sigma = 0, max_steps steps, epsilon = inf, and no clipping (clip = inf, the "
        "default). A finite clip is RaCO-DP with sigma = 0 and b = inf, the clipping-bias study "
        "of Fig. 8a (App. E.6).",
    fixed={"noise_multiplier": 0.0, "histogram_scale": 0.0, "histogram_noise": "laplace",
           "accountant": "rdp"},
    kept={"clip": math.inf})


class RacoDpProgram:
    """State (theta, lambda) and per-run streams of R RaCO-DP runs; :meth:`step` is Alg. 1's loop
    body (Alg. 1) for all of them.

    Run r makes the releases ``releases[r]`` (its plan: sampling rate, step count, gradient and
    histogram noise, clip) with ``params[r]`` (step sizes, temperature, dual update). A run that
    has taken its T steps is frozen (its parameters and multipliers no longer change) while the
    others continue, so it ends exactly as if it had been trained alone."""

    def __init__(self, model: BatchedLogisticRegression | BatchedNetwork, data: PreparedDataset,
                 constraints: Sequence[RateConstraintSet], seeds: Sequence[int],
                 params: Sequence[dict[str, Any]], releases: Sequence[Batch], *,
                 device: torch.device, members: Members | None = None) -> None:
        first = constraints[0]
        self.model = model
        self.rows = training_rows(data, device)
        self.y = torch.as_tensor(data.y_train, device=device)
        self.cells = torch.as_tensor(
            first.cells(data.y_train, data.s_train), device=device).long()
        self.members = members  # shadow runs' member sets: they sample only those
        self.n, planned = sample_sizes(members, len(self.y))
        self.q = [batch.sampling_rate for batch in releases]
        self.batch = torch.tensor([expected_batch_size(planned, q) for q in self.q],
                                  device=device)
        self.total_steps = torch.tensor([batch.count for batch in releases], device=device)
        self.fewest_steps = int(self.total_steps.min())
        self.steps = int(self.total_steps.max())
        self.steps_done = 0
        self.constraints = first  # runs of a job share the constraints up to their slack
        self.slack = torch.stack([torch.tensor(c.slack, dtype=torch.float32)
                                  for c in constraints]).to(device)
        self.state = model.init_state(len(seeds), device, seeds)
        self.dual = torch.zeros(len(seeds), first.num_constraints, device=device)

        self.lr = per_run(params, "lr", device)
        self.lr_dual = per_run(params, "lr_dual", device)
        self.temperature = per_run(params, "temperature", device)
        self.gradient, self.histogram = (
            BatchedRelease([dict((r.name, r) for r in batch.releases)[name]
                            for batch in releases], device)
            for name in ("gradient", "histogram"))
        self.hard_dual = torch.tensor([p["dual_update"] == "hard" for p in params],
                                      device=device)
        self.any_hard_dual = bool(self.hard_dual.any())
        self.sampling = [make_generator(s, "poisson", device) for s in seeds]
        self.noise = [make_generator(s, "noise", device) for s in seeds]
        self.histogram_streams = [make_generator(s, "histogram", device) for s in seeds]
        self.dropout = [make_generator(s, "dropout", device) for s in seeds]

    def step(self) -> None:
        index, mask = poisson_batches(self.n, self.q, self.sampling, device=self.y.device)
        index, mask = to_rows(index, mask, self.members)
        x = self.rows.take(index)
        y, cells = batch_values(self.y, index), batch_values(self.cells, index)
        released: dict[str, torch.Tensor] = {}

        def residual(logits: torch.Tensor) -> torch.Tensor:
            """d(Lagrangian_i)/d(logits_i) from the noisy histogram of this forward pass."""
            probs = row_softmax(self.temperature.view(-1, 1, 1) * logits)
            exact = self._histogram(cells, probs, mask)                       # eq. (8)
            noise = self.histogram.perturb(torch.zeros_like(exact), self.histogram_streams)
            soft = exact + noise                                              # eq. (9)
            weights = self.constraints.cell_weights(self.dual, soft)          # eq. (10)
            weights = weights.gather(1, cells.unsqueeze(-1).expand(-1, -1, weights.shape[-1]))
            weighted = (weights * probs).sum(dim=-1, keepdim=True)
            released.update(logits=logits, noise=noise, soft=soft)
            return (row_softmax(logits) - F.one_hot(y, 2).to(probs.dtype)
                    + (self.batch * self.temperature).view(-1, 1, 1) * probs
                    * (weights - weighted))

        step_size, lr_dual = self._step_sizes()
        self.steps_done += 1
        self.model.private_step(self.state, x, mask, residual, release=self.gradient,  # l. 8
                                generators=self.noise,
                                step_size=step_size, dropout_streams=self.dropout)
        soft = released["soft"]
        if self.any_hard_dual:
            hard = F.one_hot(released["logits"].argmax(dim=-1), 2).to(soft.dtype)
            hard = self._histogram(cells, hard, mask) + released["noise"]  # same draw
            dual_histogram = torch.where(self.hard_dual.view(-1, 1, 1), hard, soft)
        else:
            dual_histogram = soft
        rates = self.constraints.histogram_rates(dual_histogram)            # eq. (12)
        ascent = lr_dual.view(-1, 1) * (rates - self.slack)
        self.dual = torch.clamp(self.dual + ascent, min=0.0)                 # line 11

    def _step_sizes(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Primal (lr / expected batch) and dual step sizes (R,) of this step: 0 for the runs
        that have done their steps; no masking while every run is still training."""
        primal = self.lr / self.batch
        if self.steps_done < self.fewest_steps:
            return primal, self.lr_dual
        active = self.steps_done < self.total_steps
        return torch.where(active, primal, 0.0), torch.where(active, self.lr_dual, 0.0)

    def _histogram(self, cells: torch.Tensor, values: torch.Tensor,
                   mask: torch.Tensor) -> torch.Tensor:
        """(R, Q, K) sums of ``values`` (R, B, K) per cell ``cells`` (R, B) over the unmasked
        examples (eq. 8): :func:`~dpminimax.kernels.grouped.grouped_sums`."""
        return grouped_sums(values, cells, mask, self.constraints.num_cells)
