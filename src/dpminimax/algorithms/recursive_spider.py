"""DP Recursive-SPIDER (paper 004, Alg. 3) and SCDRO (Qi et al. 2022, the non-private row of
Table 3), on the KL-constrained compositional problem Eq. (5): min over (x, lam >= lam0) of
Psi = lam log(g_2) + lam rho with g_2 = mean e^{l_i / lam}.

Per step, from one Poisson batch (spec 004 §2.3 with the fixes of §10.3):

* v (estimate of grad_x g_2) and u (of grad_lam g_2): every ``period`` steps an anchor of
  per-example clipped gradients (clips C1, C3), otherwise the SPIDER accumulation of clipped
  per-example differences at w_t and w_{t-1} (typo 1: the printed lines 13-14 drop + v_{t-1});
  difference clips min(c ||w_t - w_{t-1}||, 2C) (Thm. 8's bounds, §10.4);
* s (estimate of g_2): STORM, s_t = mean clip(g(w_t)) + (1 - beta)(s_{t-1} - mean
  clip(g(w_{t-1}))) + noise (typo 2: the printed line 16 evaluates both terms at w_t); each
  example's term is in [-(1 - beta) C5, C5], so the release's bound is C5;
* z = ((lam / s) v, (lam / s) u + log s + rho) (typo 5: grad f(s) is lam / s), x -= lr z_x,
  lam -= lr_lam z_lam projected on [lam0, inf) (typo 4).

g is kept in units of e^m for a shift m updated from the released s (m += log s after each
step: post-processing, so public), which keeps e^{l/lam} finite (§10.3; the SCDRO code's
max-loss shift reads the data). One noise multiplier for every release, calibrated over the
schedule's event. ``scdro`` is the same program without noise or clipping and with moving
averages (the SCDRO code's ``SCCMA``: s, v, u <- (1 - beta) old + beta new) in place of SPIDER.
v, u and s share their batch (the paper draws B1..B4 and xi_0 separately): composed inside one
sampling event.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import RunPlan, RunSpec, nonprivate_twin, per_run
from dpminimax.algorithms.dro_program import (
    COMMON_CHECKS,
    COMMON_PARAMETERS,
    DIFFERENCE_CLIP,
    SHARED_PARAMETERS,
    Draw,
    DroProgram,
    ScheduledDroMethod,
    add_to,
    descend,
    movement,
    noiseless_control,
    subtract,
)
from dpminimax.algorithms.kl_dro import compositional_terms
from dpminimax.algorithms.params import (
    CLIP,
    COUNT,
    NON_NEGATIVE,
    POSITIVE,
    Check,
    one_of,
)
from dpminimax.data import PreparedDataset
from dpminimax.kernels.runs import along_runs

#: Floor of s in units of e^m (s estimates a mean of positive terms; noise can push it below).
S_FLOOR = 1e-3


class DpRecursiveSpider(ScheduledDroMethod):
    """DP Recursive-SPIDER (paper 004, Alg. 3; Thm. 3 / 8 privacy)."""

    name: ClassVar[str] = "dp_recursive_spider"
    label: ClassVar[str] = "DP Recursive-SPIDER"
    shared_parameters: ClassVar[tuple[str, ...]] = (*SHARED_PARAMETERS, "estimator")
    release_bounds: ClassVar[dict[str, tuple[str, float]]] = {
        "v_anchor": ("clip", 1.0), "u_anchor": ("clip_lam", 1.0),
        "v_difference": ("clip", 2.0), "u_difference": ("clip_lam", 2.0), "s": ("clip_s", 1.0)}
    parameters: ClassVar[dict[str, Any]] = {
        **COMMON_PARAMETERS, "lr": 0.1, "lr_lam": 0.01, "lam_init": 5.0, "lam0": 1e-3,
        "rho": 0.5, "clip": 0.2, "clip_lam": 0.1, "clip_s": 3.0,
        "difference_clip": DIFFERENCE_CLIP,
        "beta": 0.5, "period": 10, "anchor_batch_size": 1024, "estimator": "spider"}
    checks: ClassVar[dict[str, Check]] = {
        **COMMON_CHECKS, "lr": NON_NEGATIVE, "lr_lam": NON_NEGATIVE, "lam_init": POSITIVE,
        "lam0": POSITIVE, "rho": NON_NEGATIVE, "clip": CLIP, "clip_lam": CLIP, "clip_s": CLIP,
        "difference_clip": POSITIVE, "beta": POSITIVE, "period": COUNT,
        "anchor_batch_size": COUNT, "estimator": one_of("spider", "momentum")}

    def period(self, params) -> int:
        return params["period"] if params["estimator"] == "spider" else 1

    def schedule(self, params):
        """Anchors of (v, u, s) every period steps, differences between (SPIDER); anchors
        every step (SCDRO's moving averages)."""
        period, momentum = self.period(params), params["estimator"] == "momentum"

        def draws(t: int) -> tuple[Draw, ...]:
            if momentum:
                return (Draw("step", ("v_anchor", "u_anchor", "s")),)
            if t % period == 0:
                return (Draw("anchor", ("v_anchor", "u_anchor", "s")),)
            return (Draw("step", ("v_difference", "u_difference", "s")),)
        return draws

    def program(self, data: PreparedDataset, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> RecursiveSpiderProgram:
        _, steps, _, rates = self.layout(resolved[0], len(data.y_train), 0.0)
        return RecursiveSpiderProgram(data, runs, resolved, shared, plans, device, rates=rates,
                                      steps=steps, schedule=self.schedule(resolved[0]),
                                      momentum=shared["estimator"] == "momentum")


class RecursiveSpiderProgram(DroProgram):
    """Alg. 3's steps (or SCDRO's) for R runs."""

    def __init__(self, data, runs, resolved, shared, plans, device, *, rates, steps: int,
                 schedule, momentum: bool) -> None:
        first = resolved[0]
        super().__init__(data, runs, resolved, shared, plans, device, rates=rates, steps=steps,
                         lam0=float(first["lam0"]), rho=float(first["rho"]))
        self.schedule, self.momentum = schedule, momentum
        (self.lr, self.lr_lam, self.lam0, self.rho, self.beta, self.c_diff, self.clip_s,
         self.lam) = (per_run(resolved, key, device) for key in (
             "lr", "lr_lam", "lam0", "rho", "beta", "difference_clip", "clip_s", "lam_init"))
        # m_0: the exponent of a uniform prediction's loss (public)
        self.shift = math.log(max(2, self.model.num_classes)) / self.lam
        self.previous: dict[str, torch.Tensor] | None = None
        self.lam_before = self.lam.clone()
        self.s = torch.ones_like(self.lam)
        self.u = torch.zeros_like(self.lam)
        self.v: dict[str, torch.Tensor] = {}

    def extra_curve_values(self) -> dict[str, torch.Tensor]:
        return {"lambda": self.lam}

    def _terms(self, params, lam, batch):
        """Losses, (g_i, grad_lam g_i) and per-example grad_x g_i = (g_i / lam) grad l_i."""
        def weight(losses):
            return compositional_terms(losses, lam, self.shift)[0] / lam.unsqueeze(-1)
        losses, grads = self.weighted_gradients(params, batch, weight)
        g, g_lam = compositional_terms(losses, lam, self.shift)
        return g, g_lam, grads

    def _average(self, old, new):
        """SCDRO's moving average (1 - beta) old + beta new (new alone at the first step)."""
        if self.t == 0:
            return new
        if isinstance(new, torch.Tensor):
            return (1 - self.beta) * old + self.beta * new
        b = self.beta
        return {k: (1 - along_runs(b, v)) * old[k] + along_runs(b, v) * v
                for k, v in new.items()}

    def step(self) -> None:
        draw = self.schedule(self.t)[0]
        batch = self.draw(draw.rate)
        g, g_lam, grads = self._terms(self.params, self.lam, batch)
        capped = torch.minimum(g, self.clip_s.unsqueeze(-1))
        if self.previous is not None and not self.momentum:
            g_old, g_lam_old, grads_old = (self._terms(self.previous, self.lam_before, batch)
                                           if "v_difference" in draw.releases else
                                           (*self._old_values(batch), None))
        if self.momentum:
            self.v = self._average(self.v, self.release("v_anchor", grads, batch))
            self.u = self._average(self.u, self.release("u_anchor", g_lam, batch))
            self.s = self._average(self.s, self.release("s", capped, batch))
        else:
            if "v_anchor" in draw.releases:
                self.v = self.release("v_anchor", grads, batch)
                self.u = self.release("u_anchor", g_lam, batch)
            else:
                moved = movement(self.params, self.previous, self.lam - self.lam_before)
                self.v = add_to(self.v, self.release(
                    "v_difference", subtract(grads, grads_old), batch,
                    self.difference_shrink("v_difference", moved, self.c_diff)))
                self.u = self.u + self.release(
                    "u_difference", g_lam - g_lam_old, batch,
                    self.difference_shrink("u_difference", moved, self.c_diff))
            if self.previous is None:
                self.s = self.release("s", capped, batch)
            else:
                keep = (1 - self.beta).unsqueeze(-1)
                correction = capped - keep * torch.minimum(g_old, self.clip_s.unsqueeze(-1))
                self.s = (1 - self.beta) * self.s + self.release("s", correction, batch)
        self._update()
        self.record()

    def _old_values(self, batch):
        """(g_i, grad_lam g_i) at w_{t-1} for the STORM correction (a forward pass only)."""
        return compositional_terms(self.losses(self.previous, batch), self.lam_before,
                                   self.shift)

    def _update(self) -> None:
        """w_{t+1} = w_t - lr z_t, lam projected on [lam0, inf); then the public shift
        m += log s rescales s, v, u to units of the new e^m."""
        s = torch.clamp(self.s, min=S_FLOOR)
        ratio = self.lam / s
        z_x = {k: along_runs(ratio, v) * v for k, v in self.v.items()}
        z_lam = ratio * self.u + torch.log(s) + self.shift + self.rho
        self.previous, self.params = self.params, descend(self.params, z_x, self.lr)
        self.lam_before = self.lam
        self.lam = torch.maximum(self.lam - self.lr_lam * z_lam, self.lam0)
        self.shift = self.shift + torch.log(s)
        self.s = self.s / s
        self.u = self.u / s
        self.v = {k: v / along_runs(s, v) for k, v in self.v.items()}


Scdro = nonprivate_twin(
    DpRecursiveSpider, "Scdro", name="scdro", label="SCDRO (non-private)",
    doc="SCDRO (Qi et al. 2022, SCCMA): Eq. (5) with moving averages, no clipping or noise.",
    fixed={"clip": math.inf, "clip_lam": math.inf, "clip_s": math.inf,
           "estimator": "momentum"})
Scdro.paper = "Qi et al. 2022 (paper 004's non-private SCDRO row)"
NonPrivateRecursiveSpider = nonprivate_twin(
    DpRecursiveSpider, "NonPrivateRecursiveSpider", name="recursive_spider",
    label="Recursive-SPIDER (non-private)",
    doc="Alg. 3 without clipping or noise (epsilon = inf).",
    fixed={"clip": math.inf, "clip_lam": math.inf, "clip_s": math.inf})
DpRecursiveSpiderControl = noiseless_control(DpRecursiveSpider, "DpRecursiveSpiderControl")
