"""KL distributionally robust optimisation (paper 004, Sec. 2.2-4).

Per-example quantities of the two reformulations the paper's algorithms work on, for R runs
at once (losses (R, B), per-run scalars (R,)):

* Eq. (3) with KL, psi*(s) = e^s - 1 (Alg. 2): L(x, eta; xi) = lam (e^{(l - eta)/lam} - 1) + eta,
  so grad_x L_i = w_i grad l_i and grad_eta L_i = 1 - w_i with w_i = e^{(l_i - eta)/lam}
  (:func:`dual_weights`; no G rescaling). With a weight cap W the weights are min(w_i, W): the
  exact gradients of Eq. (3) with psi*_W(s) = e^s - 1 up to s = log W and linear (slope W)
  beyond, the conjugate of the KL divergence restricted to density ratios p_i n <= W (the
  private methods' bounded weighting; papers/dpdro/README.md, "Deviation: clipping").
* Eq. (5), the KL-constrained problem min_{x, lam >= lam0} Psi(x, lam) = lam log(mean e^{l/lam})
  + lam rho (Alg. 3, SCDRO), through g(w; xi) = e^{l/lam}: grad_x g_i = (g_i / lam) grad l_i and
  grad_lam g_i = -(l_i / lam^2) g_i. :func:`compositional_weights` gives g in units of e^m for a
  public shift m (our choice: the max-loss shift of the SCDRO code, made public here); there
  grad_lam g_i = -(g_i / lam)(log g_i + m).

The exponent is capped at :data:`EXP_CAP` (a numerical guard: contributions are clipped anyway).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

#: Largest exponent evaluated (e^60 ~ 1e26: finite in float32).
EXP_CAP = 60.0


def example_losses(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-example losses (R, B) of logits (R, B, K): binary cross-entropy with logits for K = 1,
    softmax cross-entropy for K >= 2 (Sec. 5)."""
    y = y if y.dim() == 2 else y.unsqueeze(0).expand(logits.shape[0], -1)
    if logits.shape[-1] == 1:
        return F.binary_cross_entropy_with_logits(logits[..., 0], y.to(logits.dtype),
                                                  reduction="none")
    return F.cross_entropy(logits.transpose(1, 2), y.long(), reduction="none")


def loss_residuals(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """d loss_i / d logits_i (R, B, K) of :func:`example_losses`."""
    y = y if y.dim() == 2 else y.unsqueeze(0).expand(logits.shape[0], -1)
    if logits.shape[-1] == 1:
        return torch.sigmoid(logits) - y.to(logits.dtype).unsqueeze(-1)
    return torch.softmax(logits, dim=-1) - F.one_hot(y.long(), logits.shape[-1]).to(logits.dtype)


def dual_weights(losses: torch.Tensor, eta: torch.Tensor, lam: torch.Tensor,
                 cap: torch.Tensor | None = None) -> torch.Tensor:
    """w_i = min(e^{(l_i - eta) / lam}, W) (R, B): Eq. (3)'s per-example x-gradient weight
    capped at the per-run W = ``cap`` (R,) (none: uncapped); the eta-gradient is 1 - w_i."""
    w = torch.exp(torch.clamp((losses - eta.unsqueeze(-1)) / lam.unsqueeze(-1), max=EXP_CAP))
    return w if cap is None else torch.minimum(w, cap.unsqueeze(-1))


def compositional_weights(losses: torch.Tensor, lam: torch.Tensor, shift: torch.Tensor
                          ) -> torch.Tensor:
    """g_i = e^{l_i/lam - m} (R, B) of Eq. (5) in units of e^m, m = ``shift`` (R,)."""
    return torch.exp(torch.clamp(losses / lam.unsqueeze(-1) - shift.unsqueeze(-1), max=EXP_CAP))


def psi(losses: torch.Tensor, lam: torch.Tensor, rho: float) -> torch.Tensor:
    """Psi(x, lam) (R,) of Eq. (5) from the losses (R, n) at x."""
    lam_ = lam.unsqueeze(-1)
    return (lam * (torch.logsumexp(losses / lam_, dim=-1) - math.log(losses.shape[-1]))
            + lam * rho)


def psi_lambda_derivative(losses: torch.Tensor, lam: torch.Tensor, rho: float) -> torch.Tensor:
    """d Psi / d lam (R,) = log mean e^{l/lam} + rho - sum_i p_i l_i / lam, p = softmax(l/lam)."""
    scaled = losses / lam.unsqueeze(-1)
    p = torch.softmax(scaled, dim=-1)
    return (torch.logsumexp(scaled, dim=-1) - math.log(losses.shape[-1]) + rho
            - (p * scaled).sum(dim=-1))


def best_lambda(losses: torch.Tensor, lam0: float, rho: float, *, upper: float = 1e6,
                iterations: int = 80) -> torch.Tensor:
    """argmin over lam >= lam0 of Psi(x, lam) (R,): Psi is convex in lam (a perspective), so
    its derivative is increasing; bisection on log lam (lam0 when the derivative is already
    >= 0 there, ``upper`` if still < 0 there)."""
    losses = losses.double()
    lo = torch.full(losses.shape[:1], math.log(lam0), dtype=losses.dtype, device=losses.device)
    hi = torch.full_like(lo, math.log(upper))
    for _ in range(iterations):
        mid = (lo + hi) / 2
        negative = psi_lambda_derivative(losses, mid.exp(), rho) < 0
        lo = torch.where(negative, mid, lo)
        hi = torch.where(negative, hi, mid)
    at_floor = psi_lambda_derivative(losses, torch.full_like(lo, lam0), rho) >= 0
    return torch.where(at_floor, torch.full_like(lo, lam0), hi.exp())


def dro_weights(losses: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    """p = softmax(l / lam) (R, n): grad_x Psi(x, lam) = sum_i p_i grad l_i (the worst-case
    distribution of the KL ball at the multiplier lam)."""
    return torch.softmax(losses / lam.unsqueeze(-1), dim=-1)
