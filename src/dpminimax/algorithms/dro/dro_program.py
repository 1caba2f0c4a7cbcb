"""What paper 004's methods share (Algs. 2-3 and baselines) beyond the SPIDER machinery of
:mod:`dpminimax.algorithms.spider` (draws, schedules, release trees, the difference shrink,
defined there once for the DRO programs and the games): the method's plan over its release
bounds, Poisson batches, per-example gradients of a weighted loss, clipped and noised releases,
and the curves. SPIDER differences (Alg. 2 l. 6 and 12, Alg. 3 l. 13-14) clip each example's
gradient difference at two iterates to ``min(c * ||w_t - w_{t-1}||, 2 C)``: their release's
bound is 2 C, shrunk each step by that public factor
(:meth:`~dpminimax.privacy.release.BatchedRelease.shrunk`), noise with it.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import Method, RunPlan, RunSpec, nonprivate_twin
from dpminimax.algorithms.params import (
    ACCOUNTANT,
    COUNT,
    MODEL,
    POSITIVE,
    Check,
)
from dpminimax.algorithms.spider import (
    Schedule,
    calibrated_noise,
    check_feedback,
    difference_shrink,
    sampling_rates,
    schedule_tree,
    steps_and_periods,
)
from dpminimax.data import PreparedDataset
from dpminimax.data.inputs import training_rows
from dpminimax.kernels.clip import clip_scaled, per_sample_norms
from dpminimax.kernels.gather import as_tensor, batch_values
from dpminimax.kernels.sampling import expected_batch_size, poisson_batches
from dpminimax.metrics.imbalanced import CurveRecorder, reference_objectives
from dpminimax.metrics.kl_dro import example_losses, loss_residuals
from dpminimax.models.network import batched_model
from dpminimax.privacy.release import BatchedRelease, Part, Release, releases_of
from dpminimax.seeding import make_generator
from dpminimax.tasks import DRO_CLASSIFICATION
from dpminimax.tasks.dro import output_scales

LOG = logging.getLogger(__name__)

#: Parameters every paper-004 method has (the training budget, the model, the curves and the
#: output temperature T: the released model's logits are the trained model's divided by T,
#: post-processing; 1 = the paper's; papers/dpdro/README.md, deviation 12).
COMMON_PARAMETERS: dict[str, Any] = {
    "batch_size": 128, "epochs": 2.0, "accountant": "rdp", "model": "small_cnn",
    "eval_every": 50, "curve_rows": 512, "temperature": 1.0}
COMMON_CHECKS: dict[str, Check] = {
    "batch_size": COUNT, "epochs": POSITIVE, "accountant": ACCOUNTANT, "model": MODEL,
    "eval_every": COUNT, "curve_rows": COUNT, "temperature": POSITIVE}
#: c of the SPIDER difference clips min(c ||w_t - w_{t-1}||, 2C): the 90-99th percentile of the
#: per-example difference / iterate movement ratio measured on MNIST-ST at epsilon 1 (DP
#: Double-SPIDER 0.72 / 1.27, DP Recursive-SPIDER 0.94 / 3.7; papers/dpdro/README.md).
DIFFERENCE_CLIP = 1.0
#: Parameters one batched program shares (sampling rates, step counts, shapes).
SHARED_PARAMETERS = ("batch_size", "anchor_batch_size", "epochs", "period", "accountant",
                     "model", "eval_every", "curve_rows")


class ScheduledDroMethod(Method):
    """A paper-004 method: a step schedule (:meth:`schedule`) over Gaussian releases whose
    bounds are parameters (:attr:`release_bounds`), one noise multiplier calibrated over the
    schedule's release tree."""

    paper: ClassVar[str] = "dpdro"
    source: ClassVar[str] = "paper 004 (DP-DRO), Algs. 2 and 3"
    private: ClassVar[bool] = True
    task = DRO_CLASSIFICATION
    uses_sensitive_attribute: ClassVar[bool] = False
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED_PARAMETERS
    #: Release name -> (the clip parameter bounding it, multiple): an anchor is bounded by C, a
    #: SPIDER difference by 2C (before its per-step shrink).
    release_bounds: ClassVar[dict[str, tuple[str, float]]]

    def release_bound(self, name: str, params: Mapping[str, Any]) -> float:
        """The per-example L2 bound of release ``name`` (its multiple of its clip parameter)."""
        clip, multiple = self.release_bounds[name]
        return multiple * float(params[clip])

    @abstractmethod
    def period(self, params: Mapping[str, Any]) -> int:
        """Steps per repetition of the schedule (its SPIDER period, or 1)."""

    @abstractmethod
    def schedule(self, params: Mapping[str, Any]) -> Schedule:
        """Step t's draws."""

    def layout(self, params: Mapping[str, Any], n: int, sigma: float
               ) -> tuple[Part, int, int, dict[str, float]]:
        """``(release tree, steps, period, sampling rates)`` of a run on ``n`` rows with noise
        multiplier ``sigma``."""
        period = self.period(params)
        steps, periods = steps_and_periods(params["epochs"], n, params["batch_size"], period)
        releases = {name: Release(name, "gaussian", sigma, self.release_bound(name, params))
                    for name in self.release_bounds}
        rates = sampling_rates(params["batch_size"], params["anchor_batch_size"], n)
        return (schedule_tree(self.schedule(params), period, periods, releases, rates),
                steps, period, rates)

    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """One Gaussian noise multiplier for every release of the schedule, calibrated to the
        run's (epsilon, delta) over the derived event."""
        params = self.resolve(run.params)
        _, steps, _, rates = self.layout(params, n, 0.0)
        shape = (self.name, n, *(repr(params.get(k)) for k in self.shared_parameters))
        sigma = self.calibrate(run, lambda: calibrated_noise(
            shape, lambda s: self.layout(params, n, s)[0], run.epsilon, run.delta,
            params["accountant"]), 0.0)
        tree, *_ = self.layout(params, n, sigma)
        if data is not None and any(r.name.endswith("_difference") for r in releases_of(tree)):
            check_feedback(params["difference_clip"], params["lr"], sigma,
                           parameter_count(data, params["model"]), params["batch_size"])
        return RunPlan.account(tree, {"noise_multiplier": sigma, "steps": steps,
                                      "sampling_rate": rates["step"],
                                      "anchor_sampling_rate": rates["anchor"]},
                               run.delta, params["accountant"])


def network_for(data: PreparedDataset, architecture: str):
    """The batched model paper 004's methods train on ``data`` (a binary sigmoid for two-class
    tabular data, softmax logits otherwise)."""
    classes = len(data.label_names) if data.label_names else int(data.y_train.max()) + 1
    return batched_model(data, architecture, num_classes=1 if data.kind == "tabular"
                         and classes == 2 else classes)


def parameter_count(data: PreparedDataset, architecture: str) -> int:
    """d, the number of trained parameters of the model on ``data``."""
    state = network_for(data, architecture).init_state(1, torch.device("cpu"), [0])
    return sum(v[0].numel() for v in state.values())


def control_verdicts(fit, data: PreparedDataset, device: torch.device) -> list[dict[str, Any]]:
    """Per run of a fit: its final Phi, Phi at its initialisation and the class prior's Phi
    (on the curves' training rows), and whether it ended below both."""
    first = fit.resolved_params[0]
    initial, prior = reference_objectives(fit.model, data, device,
                                          [run.seed for run in fit.runs],
                                          rows=int(first["curve_rows"]),
                                          lam0=float(first["lam0"]), rho=float(first["rho"]),
                                          output_scale=output_scales(fit.resolved_params,
                                                                     device))
    return [{"phi_final": row["dro_objective"], "phi_init": float(start), "phi_prior": prior,
             "below": bool(row["dro_objective"] < min(float(start), prior))}
            for row, start in zip(fit.counters, initial, strict=True)]


def noiseless_control(private: type[ScheduledDroMethod], class_name: str
                      ) -> type[ScheduledDroMethod]:
    """The noiseless clipped control of ``private``: the same program, clipping, weight cap
    and schedule with sigma = 0 (epsilon = inf). A configuration whose control does not end
    below Phi at initialisation and below the class prior's Phi fails before noise matters:
    its fit logs a warning saying so."""
    twin = private.twin
    control = nonprivate_twin(
        private, class_name, name=f"{private.name}_control",
        label=f"{private.label} (noiseless control)",
        doc=f"{private.label} with its clipping and schedule and no noise (sigma = 0).",
        fixed={})
    private.twin = twin  # the control does not replace the unclipped non-private twin

    def fit(self, data, runs, device, monitor=None):
        result = super(control, self).fit(data, runs, device, monitor)
        for run, verdict in zip(runs, control_verdicts(result, data, device), strict=True):
            if not verdict["below"]:
                LOG.warning(
                    "%s on %s (seed %d): the noiseless control ends at Phi %.4g, not below "
                    "Phi(init) %.4g and the class prior's %.4g: the configuration fails "
                    "before noise matters", self.name, data.name, run.seed,
                    verdict["phi_final"], verdict["phi_init"], verdict["phi_prior"])
        return result

    control.fit = fit
    return control


@dataclass
class Minibatch:
    """A drawn batch: inputs (R, B, ...), labels (R, B), mask (R, B) and its sampling rate."""

    x: torch.Tensor
    y: torch.Tensor
    mask: torch.Tensor
    rate: float


class DroProgram:
    """R runs of one paper-004 method on a batched model: sampling and noise streams, releases
    by name, per-example gradients and the curves. Subclasses implement :meth:`step`."""

    def __init__(self, data: PreparedDataset, runs: Sequence, resolved: Sequence[dict],
                 shared: dict[str, Any], plans: Sequence, device: torch.device, *,
                 rates: Mapping[str, float], steps: int, lam0: float, rho: float) -> None:
        self.model = network_for(data, shared["model"])
        self.rows = training_rows(data, device)
        self.y = torch.as_tensor(data.y_train, device=device)
        self.n = len(self.y)
        seeds = [run.seed for run in runs]
        self.params = self.model.init_state(len(seeds), device, seeds)
        self.sampling = [make_generator(seed, "poisson", device) for seed in seeds]
        self.noise = [make_generator(seed, "noise", device) for seed in seeds]
        names = dict.fromkeys(release.name for release in releases_of(plans[0].releases))
        self.releases = {name: BatchedRelease([plan.release(name) for plan in plans], device)
                         for name in names}
        self.rates = dict(rates)
        self.steps = steps
        self.t = 0
        self.output_scale = output_scales(resolved, device)
        self.released_as_trained = bool((self.output_scale == 1).all())
        self.curves = CurveRecorder(self.model, data, device, every=shared["eval_every"],
                                    steps=steps, rows=shared["curve_rows"], lam0=lam0, rho=rho,
                                    runs=len(seeds))

    @property
    def state(self) -> dict[str, torch.Tensor]:
        """The released model: the iterate with its logits divided by each run's temperature."""
        if self.released_as_trained:
            return self.params
        return self.model.scale_logits(self.params, self.output_scale)

    @property
    def counters(self) -> list[dict[str, Any]]:
        return self.curves.rows()

    def draw(self, rate: str) -> Minibatch:
        q = self.rates[rate]
        index, mask = poisson_batches(self.n, q, self.sampling, device=self.y.device)
        return Minibatch(as_tensor(self.rows.take(index)), batch_values(self.y, index), mask, q)

    def losses(self, params: dict[str, torch.Tensor], batch: Minibatch) -> torch.Tensor:
        """Per-example losses (R, B) at ``params`` (a forward pass only)."""
        return example_losses(self.model.logits(params, batch.x), batch.y)

    def weighted_gradients(self, params: dict[str, torch.Tensor], batch: Minibatch,
                           weight: Callable[[torch.Tensor], torch.Tensor]
                           ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Losses (R, B) and per-example gradients ``weight(l)_i grad l_i`` (R, B, ...) at
        ``params`` (the weights are constants of the losses: Eq. (3)'s w_i, Eq. (5)'s
        g_i / lam)."""
        seen: dict[str, torch.Tensor] = {}

        def residual(logits: torch.Tensor) -> torch.Tensor:
            seen["losses"] = example_losses(logits, batch.y)
            return weight(seen["losses"]).unsqueeze(-1) * loss_residuals(logits, batch.y)

        _, grads = self.model.per_example_grads(params, batch.x, residual)
        return seen["losses"], grads

    def clipped_weighted_gradients(self, params: dict[str, torch.Tensor], batch: Minibatch,
                                   weight: Callable[[torch.Tensor], torch.Tensor],
                                   clip: torch.Tensor
                                   ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The weights ``weight(l)`` (R, B) and per-example ``weight(l)_i clip(grad l_i, C)``
        (R, B, ...): the loss gradient clipped to the per-run ``clip`` (R,) BEFORE the weight,
        so a weight bounded by W bounds each example's contribution by W C
        (papers/dpdro/README.md, "Deviation: clipping")."""
        losses, grads = self.weighted_gradients(params, batch, torch.ones_like)
        weights = weight(losses)
        factor = clip_scaled(weights, per_sample_norms(grads), clip)
        return weights, {k: g * factor.reshape(*factor.shape, *([1] * (g.dim() - 2)))
                         for k, g in grads.items()}

    def release(self, name: str, contributions: dict[str, torch.Tensor] | torch.Tensor,
                batch: Minibatch, shrink: torch.Tensor | None = None):
        """The noisy mean estimate of release ``name``: per-example ``contributions``
        ((R, B, ...) tensors, or one (R, B) scalar each) clipped to the release's bound
        (times ``shrink``), summed, noised, divided by the expected batch size qn."""
        release = self.releases[name]
        if shrink is not None:
            release = release.shrunk(shrink)
        scalar = isinstance(contributions, torch.Tensor)
        values = {"value": contributions.unsqueeze(-1)} if scalar else contributions
        noisy = release.privatize(values, self.noise, batch.mask)
        mean = {k: v / expected_batch_size(self.n, batch.rate) for k, v in noisy.items()}
        return mean["value"][:, 0] if scalar else mean

    def difference_shrink(self, name: str, movement: torch.Tensor, factor: torch.Tensor
                          ) -> torch.Tensor:
        """``min(c ||w_t - w_{t-1}||, 2 C) / (2 C)`` (R,): the shrink of the difference release
        ``name`` (bound 2 C) for the iterate movement (R,) and the per-run c (our choice where the
        paper is silent)."""
        return difference_shrink(self.releases[name].clip, movement, factor)

    def record(self) -> None:
        """Advance the step counter and record the curves when due."""
        self.t += 1
        if self.curves.due(self.t):
            self.curves.record(self.t, self.state, self.extra_curve_values())

    def extra_curve_values(self) -> dict[str, torch.Tensor]:
        """Per-run scalars (R,) the method adds to its curves (its dual variable)."""
        return {}
