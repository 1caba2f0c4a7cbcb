"""DP Recursive-SPIDER (paper 004, Alg. 3) and SCDRO (Qi et al. 2022, the non-private row of
Table 3), on the KL-constrained compositional problem Eq. (5): min over (x, lam >= lam0) of
Psi = lam log(g_2) + lam rho with g_2 = mean e^{l_i / lam}.

Per step, from one Poisson batch: SPIDER estimates v (of lam grad_x g_2) and h (mean g log g),
a STORM estimate s (of g_2), then x -= lr v / s and a projected step of lam along
rho + log s - h / s. Gradients are computed in units of a public shift e^m (m += log s after
each step); each example's weight is capped at W (``weight_cap``) and its loss gradient clipped
at C, so every release has an explicit bound. Alg. 3's typos are fixed. ``scdro`` is the same
program without noise, cap or clip and with moving averages in place of SPIDER. The derivation,
the bounds, the typos and why the paper's own clips are not used:
``papers/dpdro/NOTES.md``.
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
    SHARED_PARAMETERS,
    DroProgram,
    ScheduledDroMethod,
    noiseless_control,
)
from dpminimax.algorithms.params import (
    CLIP,
    COUNT,
    NON_NEGATIVE,
    POSITIVE,
    Check,
    one_of,
)
from dpminimax.algorithms.spider import Draw, add_to, descend, movement, subtract
from dpminimax.data import PreparedDataset
from dpminimax.kernels.clip import clip_each_run
from dpminimax.kernels.runs import along_runs
from dpminimax.metrics.kl_dro import compositional_weights

#: Smallest s (units of e^m) a step divides by: s estimates a mean of positive terms, noise can
#: push it below.
S_FLOOR = 1e-3


class DpRecursiveSpider(ScheduledDroMethod):
    """DP Recursive-SPIDER (paper 004, Alg. 3; Thm. 3 / 8 privacy)."""

    name: ClassVar[str] = "dp_recursive_spider"
    label: ClassVar[str] = "DP Recursive-SPIDER"
    shared_parameters: ClassVar[tuple[str, ...]] = (*SHARED_PARAMETERS, "estimator")
    release_bounds: ClassVar[dict[str, tuple[str, float]]] = {
        "v_anchor": ("clip", 1.0), "h_anchor": ("weight_cap", 1.0),
        "v_difference": ("clip", 2.0), "h_difference": ("weight_cap", 1.0),
        "s": ("weight_cap", 1.0)}
    parameters: ClassVar[dict[str, Any]] = {
        **COMMON_PARAMETERS, "lr": 0.1, "lr_lam": 0.01, "lam_init": 5.0, "lam0": 1e-3,
        "rho": 0.5, "clip": 1.0, "weight_cap": 5.0, "difference_clip": DIFFERENCE_CLIP,
        "beta": 0.5, "period": 10, "anchor_batch_size": 1024, "estimator": "spider"}
    checks: ClassVar[dict[str, Check]] = {
        **COMMON_CHECKS, "lr": NON_NEGATIVE, "lr_lam": NON_NEGATIVE, "lam_init": POSITIVE,
        "lam0": POSITIVE, "rho": NON_NEGATIVE, "clip": CLIP, "weight_cap": CLIP,
        "difference_clip": POSITIVE, "beta": POSITIVE, "period": COUNT,
        "anchor_batch_size": COUNT, "estimator": one_of("spider", "momentum")}

    def release_bound(self, name, params) -> float:
        """v: W C (a difference 2 W C); h: the largest |g log g| over g in (0, W] (a
        difference: its range); s: W."""
        cap = float(params["weight_cap"])
        if name.startswith("v_"):
            return super().release_bound(name, params) * cap
        if name.startswith("h_"):
            low, high = entropy_range(cap)
            return max(-low, high) if name == "h_anchor" else high - low
        return cap

    def period(self, params) -> int:
        return params["period"] if params["estimator"] == "spider" else 1

    def schedule(self, params):
        """Anchors of (v, h, s) every period steps, differences between (SPIDER); anchors
        every step (SCDRO's moving averages)."""
        period, momentum = self.period(params), params["estimator"] == "momentum"

        def draws(t: int) -> tuple[Draw, ...]:
            if momentum:
                return (Draw("step", ("v_anchor", "h_anchor", "s")),)
            if t % period == 0:
                return (Draw("anchor", ("v_anchor", "h_anchor", "s")),)
            return (Draw("step", ("v_difference", "h_difference", "s")),)
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
        (self.lr, self.lr_lam, self.lam0, self.rho, self.beta, self.c_diff, self.clip,
         self.cap, self.lam) = (per_run(resolved, key, device) for key in (
             "lr", "lr_lam", "lam0", "rho", "beta", "difference_clip", "clip", "weight_cap",
             "lam_init"))
        # m_0: the exponent of a uniform prediction's loss (public)
        self.shift = math.log(max(2, self.model.num_classes)) / self.lam
        self.previous: dict[str, torch.Tensor] | None = None
        self.lam_before = self.lam.clone()
        self.s = torch.ones_like(self.lam)
        # per run, the bounds of deviation 13: the range of h = mean g log g over g in (0, W],
        # and log W, the largest h / s
        ranges = [entropy_range(cap) for cap in self.cap.tolist()]
        self.h_low, self.h_high = (torch.tensor(bounds, dtype=self.lam.dtype, device=device)
                                   for bounds in zip(*ranges, strict=True))
        self.log_cap = torch.log(self.cap)
        self.h = torch.zeros_like(self.lam)
        self.v: dict[str, torch.Tensor] = {}

    def extra_curve_values(self) -> dict[str, torch.Tensor]:
        return {"lambda": self.lam}

    def _weights(self, losses: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
        """g'_i = min(e^{l_i/lam - m}, W) (R, B)."""
        return torch.minimum(compositional_weights(losses, lam, self.shift),
                             self.cap.unsqueeze(-1))

    def _terms(self, params, lam, batch):
        """Per example g'_i, g'_i log g'_i and g'_i clip(grad l_i, C) at ``params`` and ``lam``."""
        g, grads = self.clipped_weighted_gradients(
            params, batch, lambda losses: self._weights(losses, lam), self.clip)
        return g, torch.special.xlogy(g, g), grads

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
        g, h, grads = self._terms(self.params, self.lam, batch)
        if self.momentum:
            self.v = self._average(self.v, self.release("v_anchor", grads, batch))
            self.h = self._average(self.h, self.release("h_anchor", h, batch))
            self.s = self._average(self.s, self.release("s", g, batch))
        else:
            if "v_anchor" in draw.releases:
                self.v = self.release("v_anchor", grads, batch)
                self.h = self.release("h_anchor", h, batch)
                g_old = (None if self.previous is None else
                         self._weights(self.losses(self.previous, batch), self.lam_before))
            else:
                g_old, h_old, grads_old = self._terms(self.previous, self.lam_before, batch)
                moved = movement(self.params, self.previous, self.lam - self.lam_before)
                self.v = add_to(self.v, self.release(
                    "v_difference", subtract(grads, grads_old), batch,
                    self.difference_shrink("v_difference", moved, self.c_diff)))
                self.h = self.h + self.release(
                    "h_difference", h - h_old, batch,
                    self.difference_shrink("h_difference", moved, self.c_diff))
            self.s = self.release("s", g, batch) if g_old is None else (
                (1 - self.beta) * self.s
                + self.release("s", g - (1 - self.beta).unsqueeze(-1) * g_old, batch))
        self._update()
        self.record()

    def _update(self) -> None:
        """w_{t+1} = w_t - lr z_t, lam projected on [lam0, inf). The estimates first go onto
        the sets their noiseless values lie in: s <= W, h in the range of g log g, z_x = v / s
        (a g-weighted mean of gradients clipped at C) in the C-ball and h / s (a g-weighted mean
        of log g) at most log W; a projection on a convex set holding the true value never moves
        an estimate away from it (post-processing; deviation 13 of the README). Then the public
        shift m += log s rescales the estimates to units of the new e^m (g_i -> g_i / s: s -> s / s,
        v -> v / s, h = mean g log g -> (h - s log s) / s). A run whose noisy s is at or below
        ``S_FLOOR`` (s estimates a positive mean) holds w, lam and m for this step: dividing by
        the floor would multiply the step by up to 1 / S_FLOOR and rescale s to -s / S_FLOOR."""
        valid = self.s > S_FLOOR
        self.s = torch.minimum(self.s, self.cap)
        self.h = torch.clamp(self.h, self.h_low, self.h_high)
        s = torch.where(valid, self.s, torch.ones_like(self.s))
        log_s = torch.log(s)
        z_x = clip_each_run({k: v / along_runs(s, v) for k, v in self.v.items()}, self.clip)
        z_lam = self.rho + log_s - torch.minimum(self.h / s, self.log_cap)
        self.previous = self.params
        self.params = descend(self.params, z_x, torch.where(valid, self.lr, 0.0))
        self.lam_before = self.lam
        self.lam = torch.where(valid, torch.maximum(self.lam - self.lr_lam * z_lam, self.lam0),
                               self.lam)
        self.shift = self.shift + log_s
        self.h = (self.h - self.s * log_s) / s
        self.s = self.s / s
        self.v = {k: v / along_runs(s, v) for k, v in self.v.items()}


def entropy_range(cap: float) -> tuple[float, float]:
    """The range (low, high) of g log g over g in (0, W]: its minimum -1/e is at g = 1/e."""
    top = cap * math.log(cap)
    return (-1 / math.e if cap >= 1 / math.e else top), max(0.0, top)


Scdro = nonprivate_twin(
    DpRecursiveSpider, "Scdro", name="scdro", label="SCDRO (non-private)",
    doc="SCDRO (Qi et al. 2022, SCCMA): Eq. (5) with moving averages, no clipping or noise.",
    fixed={"clip": math.inf, "weight_cap": math.inf, "estimator": "momentum"})
Scdro.source = "Qi et al. 2022 (SCDRO; paper 004's non-private row)"
NonPrivateRecursiveSpider = nonprivate_twin(
    DpRecursiveSpider, "NonPrivateRecursiveSpider", name="dp_recursive_spider_nonprivate",
    label="Recursive-SPIDER (non-private)",
    doc="Alg. 3 without clipping or noise (epsilon = inf).",
    fixed={"clip": math.inf, "weight_cap": math.inf})
DpRecursiveSpiderControl = noiseless_control(DpRecursiveSpider, "DpRecursiveSpiderControl")
