"""The ERMI fairness regulariser and its min-max form (DP-FERMI paper, Def. 3.1, Thm. 3.2,
Lemma D.1, App. B eq. 5), for R runs at once.

Shapes: predicted-class probabilities ``F`` (R, B, l) (rows sum to 1), one-hot sensitive
attributes ``s`` (B, k) shared by the runs or (R, B, k), the dual variable ``W`` (R, k, l) and the
group proportions ``p_s`` (k,) or (R, k). Per example (scalar form of Lemma D.1's psi),
with ``u_i = P_S^{-1/2} s_i``:

    psi_i(theta, W) = -sum_{r,j} W_rj^2 F_ij + 2 sum_{r,j} W_rj u_ir F_ij - 1 = sum_j c_ij F_ij - 1,
    c_ij = dpsi_i / dF_ij = -(W^T W)_jj + 2 (W^T u_i)_j,
    grad_W psi_i = 2 (u_i 1^T - W) diag(F_i)                                   (Lemma D.1).

Only the second term of c_ij depends on s_i (the paper's privacy proof uses this split, returned
by :func:`psi_grad_f_parts`); the theta-gradient is ``sum_j c_ij grad_theta F_ij`` (chain rule
through the model). ``mean_i psi_i`` is maximised by ``W*_rj = pbar(j, r) / (sqrt(p_s(r))
pbar(j))`` (soft counts), where its value is the ERMI of the soft predictions.
Equalized odds (eq. 5) evaluates psi_i with the W and ``P_{S|Y=y_i}`` of the example's label.

Products with ``u`` are matrix products: u has one non-zero per row, so ``W^T u_i`` is exact
whatever the summation order.
"""

from __future__ import annotations

import torch

from dpminimax.kernels.clip import example_sum


def _scaled_attributes(s: torch.Tensor, p_s: torch.Tensor) -> torch.Tensor:
    """``u_i = P_S^{-1/2} s_i`` (R or 1, B, k) for s (B, k) / (R, B, k), p_s (k,) / (R, k)."""
    s = s if s.dim() == 3 else s.unsqueeze(0)
    inverse_sqrt = torch.rsqrt(p_s)
    return s * (inverse_sqrt.view(1, 1, -1) if p_s.dim() == 1 else inverse_sqrt.unsqueeze(1))


def psi_grad_f_parts(s: torch.Tensor, w: torch.Tensor,
                     p_s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(-(W^T W)_jj, 2 (W^T u_i)_j)``, each (R, B, l): the parts of dpsi_i/dF_ij that do not
    and that do depend on s_i (Lemma D.1, theta-gradient)."""
    sensitive = 2.0 * torch.matmul(_scaled_attributes(s, p_s), w)
    return -(w * w).sum(dim=-2).unsqueeze(1).expand_as(sensitive), sensitive


def psi_grad_f(s: torch.Tensor, w: torch.Tensor, p_s: torch.Tensor) -> torch.Tensor:
    """``c_ij = dpsi_i / dF_ij`` (R, B, l); psi_i is linear in F_i with these coefficients."""
    independent, sensitive = psi_grad_f_parts(s, w, p_s)
    return independent + sensitive


def psi(f: torch.Tensor, s: torch.Tensor, w: torch.Tensor, p_s: torch.Tensor) -> torch.Tensor:
    """``psi_i(theta, W)`` (R, B) (Thm. 3.2 / Lemma D.1)."""
    return (psi_grad_f(s, w, p_s) * f).sum(dim=-1) - 1.0


def psi_grad_w(f: torch.Tensor, s: torch.Tensor, w: torch.Tensor, p_s: torch.Tensor,
               weights: torch.Tensor | None = None) -> torch.Tensor:
    """``sum_i a_i grad_W psi_i = 2 U^T diag(a) F - 2 W diag(sum_i a_i F_i)`` (R, k, l)
    (Lemma D.1 summed with per-example weights ``a`` (R, B), default 1); no per-example
    k x l gradient is formed."""
    weighted = f if weights is None else weights.unsqueeze(-1) * f
    u = _scaled_attributes(s, p_s).expand(f.shape[0], -1, -1)
    return 2.0 * (torch.bmm(u.transpose(1, 2), weighted)
                  - w * example_sum(weighted).unsqueeze(1))


def psi_grad_w_norms(f: torch.Tensor, s: torch.Tensor, w: torch.Tensor,
                     p_s: torch.Tensor) -> torch.Tensor:
    """Per-example Frobenius norms ``||grad_W psi_i||`` (R, B), from
    ``||grad_W psi_i||^2 = 4 sum_j F_ij^2 ||u_i - W_:j||^2`` and
    ``||u_i - W_:j||^2 = ||u_i||^2 - 2 (W^T u_i)_j + (W^T W)_jj``."""
    u = _scaled_attributes(s, p_s)
    independent, sensitive = psi_grad_f_parts(s, w, p_s)
    distance = torch.clamp((u * u).sum(dim=-1, keepdim=True) - sensitive - independent, min=0.0)
    return 2.0 * torch.sqrt((f * f * distance).sum(dim=-1))


def soft_joint(f: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """``pbar(r, j) = mean_i s_ir F_ij`` (R, k, l): the (soft) joint frequencies of S and Y-hat."""
    s = s if s.dim() == 3 else s.unsqueeze(0)
    return torch.matmul(s.transpose(1, 2), f) / f.shape[1]


def _ratio(numerator: torch.Tensor, denominator: torch.Tensor) -> torch.Tensor:
    """``numerator / denominator`` with 0 where the denominator is 0 (an empty class or group:
    its joint frequencies are 0 too)."""
    safe = torch.where(denominator > 0, denominator, torch.ones_like(denominator))
    return torch.where(denominator > 0, numerator / safe, torch.zeros_like(numerator))


def optimal_w(f: torch.Tensor, s: torch.Tensor, p_s: torch.Tensor) -> torch.Tensor:
    """The maximiser ``W*_rj = pbar(j, r) / (sqrt(p_s(r)) pbar(j))`` (R, k, l) of
    ``mean_i psi_i(theta, .)`` over the given examples (Lemma D.1, first-order condition)."""
    joint = soft_joint(f, s)
    scale = torch.sqrt(p_s).view(-1, p_s.shape[-1], 1) * joint.sum(dim=-2, keepdim=True)
    return _ratio(joint, scale)


def _chi_square_plus_one(joint: torch.Tensor) -> torch.Tensor:
    """``sum_{r,j} p(r,j)^2 / (p(r) p(j))`` (R,) of joint frequencies (R, k, l)."""
    marginals = joint.sum(dim=-1, keepdim=True) * joint.sum(dim=-2, keepdim=True)
    return _ratio(joint * joint, marginals).sum(dim=(-2, -1))


def ermi(f: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """Empirical ERMI (Def. 3.1) (R,): ``sum_{j,r} p(j,r)^2 / (p(j) p(r)) - 1`` over the given
    examples; hard predictions are one-hot ``f``, soft ones give the "soft ERMI" that
    ``max_W mean_i psi_i`` attains."""
    return _chi_square_plus_one(soft_joint(f, s)) - 1.0


def conditional_ermi(f: torch.Tensor, s: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Conditional ERMI for equalized odds (App. B eq. 5) (R,):
    ``sum_y p_Y(y) sum_{j,r} p(j,r|y)^2 / (p(j|y) p(r|y)) - 1`` with one-hot labels ``y``
    (B, L) or (R, B, L); a label with no example has weight p_Y(y) = 0."""
    s = s if s.dim() == 3 else s.unsqueeze(0)
    y = y if y.dim() == 3 else y.unsqueeze(0)
    total = torch.zeros(f.shape[0], dtype=f.dtype, device=f.device)
    for label in range(y.shape[-1]):
        member = y[..., label:label + 1]                                   # (R or 1, B, 1)
        size = member.sum(dim=1)                                           # (R or 1, 1)
        joint = torch.matmul((s * member).transpose(1, 2), f)             # n p(r, j | y)
        total = total + (size / f.shape[1]).squeeze(-1) * _chi_square_plus_one(
            _ratio(joint, size.unsqueeze(-1)))
    return total - 1.0
