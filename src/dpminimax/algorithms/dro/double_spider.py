"""DP Double-SPIDER (paper 004, Alg. 2) and the two DP baselines of its Table 3, on the KL dual
reformulation Eq. (3), min over (x, eta) of L(x, eta) = lam mean(e^{(l_i - eta)/lam} - 1) + eta.

One program, three schedules: ``dp_double_spider`` (Alg. 2: eta, then x at the new eta, each
from its own Poisson batch; an anchor every ``period`` steps, per-example SPIDER differences in
between), ``dp_sgda_dro`` (DP-SGDA, Yang et al. 2022) and ``privatediff_dro`` (PrivateDiff
Minimax, Zhang et al. 2025c). Each loss gradient is clipped at C and each weight capped at W
(``weight_cap``), so an x contribution is at most W C (a difference 2 W C) and a dual one at
most max(1, W - 1); every release is Gaussian with one noise multiplier calibrated over the
schedule.

Derivation and choices: papers/dpdro/NOTES.md, section "DP Double-SPIDER and its baselines".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import RunPlan, RunSpec, nonprivate_twin, per_run
from dpminimax.algorithms.dro.dro_program import (
    COMMON_CHECKS,
    COMMON_PARAMETERS,
    DIFFERENCE_CLIP,
    DroProgram,
    ScheduledDroMethod,
    noiseless_control,
)
from dpminimax.algorithms.params import CLIP, COUNT, NON_NEGATIVE, POSITIVE, Check
from dpminimax.algorithms.spider import (
    ANCHOR,
    Stage,
    add_to,
    descend,
    movement,
    spider_schedule,
    subtract,
)
from dpminimax.data import PreparedDataset
from dpminimax.metrics.kl_dro import dual_weights


class DualSpiderMethod(ScheduledDroMethod):
    """A method on Eq. (3) defined by its step schedule (subclasses set the class flags)."""

    #: Whether eta and x read separate batches (Alg. 2) or one batch per step.
    separate_batches: ClassVar[bool] = False
    #: Whether the dual (eta) estimate is a SPIDER (Alg. 2) or a fresh gradient every step.
    dual_spider: ClassVar[bool] = False
    #: Whether the x estimate is a SPIDER with anchors every ``period`` steps.
    primal_spider: ClassVar[bool] = False
    #: Whether x steps at the new eta (Alg. 2, PrivateDiff) or at the old one (DP-SGDA).
    sequential: ClassVar[bool] = True
    release_bounds: ClassVar[dict[str, tuple[str, float]]] = {
        "dual_anchor": ("weight_cap", 1.0), "dual_difference": ("weight_cap", 1.0),
        "x_anchor": ("clip", 1.0), "x_difference": ("clip", 2.0)}
    parameters: ClassVar[dict[str, Any]] = {
        **COMMON_PARAMETERS, "lr": 0.1, "lr_dual": 0.1, "clip": 1.0, "weight_cap": 5.0,
        "difference_clip": DIFFERENCE_CLIP, "anchor_batch_size": 128, "period": 1, "lam": 1.0,
        "lam0": 1e-3, "rho": 0.5}
    checks: ClassVar[dict[str, Check]] = {
        **COMMON_CHECKS, "lr": NON_NEGATIVE, "lr_dual": NON_NEGATIVE, "clip": CLIP,
        "weight_cap": CLIP, "difference_clip": POSITIVE, "anchor_batch_size": COUNT,
        "period": COUNT, "lam": POSITIVE, "lam0": POSITIVE, "rho": NON_NEGATIVE}

    def release_bound(self, name, params) -> float:
        """x: W C (a difference 2 W C); the dual 1 - w_i in [1 - W, 1]: max(1, W - 1) (a
        difference of two weights in (0, W]: W)."""
        cap = float(params["weight_cap"])
        if name.startswith("x_"):
            return super().release_bound(name, params) * cap
        return max(1.0, cap - 1.0) if name == "dual_anchor" else cap

    def period(self, params) -> int:
        return params["period"] if (self.dual_spider or self.primal_spider) else 1

    def schedule(self, params):
        """Step t's draws (:func:`~dpminimax.algorithms.spider.spider_schedule`): eta then x,
        from separate batches (Alg. 2) or one shared draw."""
        return spider_schedule(self.period(params), (Stage(("dual",), self.dual_spider),
                                                     Stage(("x",), self.primal_spider)),
                               self.separate_batches)

    def program(self, data: PreparedDataset, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> DualSpiderProgram:
        _, steps, _, rates = self.layout(resolved[0], len(data.y_train), 0.0)
        return DualSpiderProgram(self, data, runs, resolved, shared, plans, device,
                                 rates=rates, steps=steps)


class DualSpiderProgram(DroProgram):
    """The batched program of a :class:`DualSpiderMethod` (Alg. 2's steps for R runs)."""

    def __init__(self, method: DualSpiderMethod, data, runs, resolved, shared, plans, device, *,
                 rates, steps: int) -> None:
        first = resolved[0]
        super().__init__(data, runs, resolved, shared, plans, device, rates=rates, steps=steps,
                         lam0=float(first["lam0"]), rho=float(first["rho"]))
        self.method, self.schedule = method, method.schedule(first)
        self.lr, self.lr_dual, self.lam, self.c_diff, self.clip, self.cap = (
            per_run(resolved, key, device) for key in ("lr", "lr_dual", "lam", "difference_clip",
                                                       "clip", "weight_cap"))
        # eta_0: the loss of a uniform prediction (public; our choice, where the paper is silent;
        # an alternative is the mean initial loss, which would read the data)
        classes = max(2, self.model.num_classes)
        self.eta = torch.full((len(runs),), math.log(classes), device=device)
        self.previous: dict[str, torch.Tensor] | None = None
        self.eta_before = self.eta.clone()      # eta_{t-1}, the dual difference's old point
        self.x_eta_before = self.eta.clone()    # the eta the last x estimate was taken at
        self.g = torch.zeros_like(self.eta)
        self.v: dict[str, torch.Tensor] = {}

    def extra_curve_values(self) -> dict[str, torch.Tensor]:
        return {"eta": self.eta}

    def _dual(self, batch, kind: str) -> torch.Tensor:
        """Alg. 2 l. 4 / 6: grad_eta L_i = 1 - w_i, or its difference at (x_{t-1}, eta_{t-1})."""
        now = dual_weights(self.losses(self.params, batch), self.eta, self.lam, self.cap)
        if kind == ANCHOR:
            return self.release("dual_anchor", 1.0 - now, batch)
        before = dual_weights(self.losses(self.previous, batch), self.eta_before, self.lam,
                              self.cap)
        shift = movement(self.params, self.previous, self.eta - self.eta_before)
        return self.g + self.release("dual_difference", before - now, batch,
                                     self.difference_shrink("dual_difference", shift,
                                                            self.c_diff))

    def _primal(self, batch, kind: str, eta: torch.Tensor) -> dict[str, torch.Tensor]:
        """Alg. 2 l. 10 / 12: grad_x L_i = w_i clip(grad l_i, C) at (x_t, eta), or its
        difference with (x_{t-1}, eta of the last x estimate), same examples."""
        now = self._x_terms(self.params, batch, eta)
        if kind == ANCHOR:
            return self.release("x_anchor", now, batch)
        before = self._x_terms(self.previous, batch, self.x_eta_before)
        shift = movement(self.params, self.previous, eta - self.x_eta_before)
        return add_to(self.v, self.release("x_difference", subtract(now, before), batch,
                                           self.difference_shrink("x_difference", shift,
                                                                  self.c_diff)))

    def _x_terms(self, params, batch, eta: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per-example min(w_i, W) clip(grad l_i, C) at ``params`` and ``eta``."""
        return self.clipped_weighted_gradients(
            params, batch, lambda losses: dual_weights(losses, eta, self.lam, self.cap),
            self.clip)[1]

    def step(self) -> None:
        draws = self.schedule(self.t)
        first = self.draw(draws[0].rate)
        dual_kind = draws[0].releases[0].removeprefix("dual_")
        primal_kind = draws[-1].releases[-1].removeprefix("x_")
        self.g = self._dual(first, dual_kind)
        new_eta = self.eta - self.lr_dual * self.g
        at = new_eta if self.method.sequential else self.eta
        batch = self.draw(draws[1].rate) if len(draws) > 1 else first
        self.v = self._primal(batch, primal_kind, at)
        self.previous, self.params = self.params, descend(self.params, self.v, self.lr)
        self.eta_before, self.eta, self.x_eta_before = self.eta, new_eta, at
        self.record()


class DpDoubleSpider(DualSpiderMethod):
    """DP Double-SPIDER (paper 004, Alg. 2; Thm. 1 / 6 privacy)."""

    name: ClassVar[str] = "dp_double_spider"
    label: ClassVar[str] = "DP Double-SPIDER"
    separate_batches = True
    dual_spider = True
    primal_spider = True
    parameters: ClassVar[dict[str, Any]] = {**DualSpiderMethod.parameters, "period": 10,
                                            "anchor_batch_size": 1024}


class DpSgdaDro(DualSpiderMethod):
    """DP-SGDA (Yang et al. 2022; the baseline paper 004 cites as Rafique et al. 2022) on Eq. (3)
    for a network: the schedule above without SPIDER estimates. The problem-generic ``dp_sgda``
    (:mod:`dpminimax.algorithms.minimax.sgda`) is the same algorithm on closed-form problems,
    Eq. (3) for a linear model among them (P-DRO, ``kl_dro_logistic``)."""

    name: ClassVar[str] = "dp_sgda_dro"
    label: ClassVar[str] = "DP-SGDA"
    paper: ClassVar[str] = "dpdro"
    source: ClassVar[str] = "Yang et al. 2022 (DP-SGDA; paper 004's baseline)"
    sequential = False


class PrivateDiffDro(DualSpiderMethod):
    """PrivateDiff Minimax (Zhang et al. 2025c), paper 004's second baseline."""

    name: ClassVar[str] = "privatediff_dro"
    label: ClassVar[str] = "PrivateDiff"
    paper: ClassVar[str] = "dpdro"
    source: ClassVar[str] = "Zhang et al. 2025c (PrivateDiff Minimax; paper 004's baseline)"
    primal_spider = True
    parameters: ClassVar[dict[str, Any]] = {**DualSpiderMethod.parameters, "period": 2}


NonPrivateDoubleSpider = nonprivate_twin(
    DpDoubleSpider, "NonPrivateDoubleSpider", name="dp_double_spider_nonprivate",
    label="Double-SPIDER (non-private)",
    doc="Alg. 2 without clipping or noise (epsilon = inf).",
    fixed={"clip": math.inf, "weight_cap": math.inf})
DpDoubleSpiderControl = noiseless_control(DpDoubleSpider, "DpDoubleSpiderControl")
DpSgdaDroControl = noiseless_control(DpSgdaDro, "DpSgdaDroControl")
PrivateDiffDroControl = noiseless_control(PrivateDiffDro, "PrivateDiffDroControl")
