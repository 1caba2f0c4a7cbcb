"""Base solvers for the strongly convex finite-sum problems of BYOA Algs. 1 and 2
(Sec. 5): projected gradient descent and Nesterov's accelerated gradient (the
references), prox-SVRG (Johnson-Zhang 2013, Xiao-Zhang 2014) and Katyusha
(Allen-Zhu 2017), and Xiao and Zhang 2014's Prox-SVRG as analysed (averaged snapshot: the
randomized solver with a proven rate that Markov stopping is audited on). Each solves R runs
at once (a :class:`~dpminimax.solvers.base.Subproblem`) and stops a run only on its certificate
(:func:`~dpminimax.solvers.base.certificate`; under Markov stopping, after its planned
iterations) at a point whose full gradient it computes (counted); step sizes come from the
a-priori constants, per run (columns (R, 1)): l the per-sample smoothness, m the strong
convexity of the subproblem, L_G = l + the proximal modulus.
"""

from __future__ import annotations

import torch

from dpminimax.problems.base import Point
from dpminimax.solvers.base import Subproblem, add, smallest, variance_reduced


def gradient_descent(subproblem: Subproblem, start: Point) -> Point:
    """Projected GD on the whole objective, step 1 / L_G (rate 1 - m / L_G per step). The
    gradient of each step certifies the iterate it is taken at, so the count is
    n x (steps + 1)."""
    point = start
    while True:
        gradient = subproblem.operator(point)
        if subproblem.certify(point, gradient):
            return subproblem.solution
        point = subproblem.project(add(point, gradient, -1.0 / subproblem.lipschitz))


def gradient_descent_rate(subproblem: Subproblem) -> torch.Tensor:
    """Per run (R, 1), the factor 1 - m / L_G by which a projected GD step (step 1 / L_G)
    shrinks ||x - x*||^2 (m-strongly convex, L_G-smooth; Markov stopping)."""
    return 1.0 - smallest(subproblem.moduli) / subproblem.lipschitz


def accelerated_gradient(subproblem: Subproblem, start: Point) -> Point:
    """Nesterov's constant-momentum method for an m-strongly convex L_G-smooth objective over a
    convex set (V-FISTA, Beck 2017 §10.7.7): y = x + beta (x - x_prev), x <- Pi(y - grad(y) /
    L_G), beta = (sqrt(kappa) - 1) / (sqrt(kappa) + 1), kappa = L_G / m. A run's certificate
    (one more full gradient, at x, counted for the runs checked) is checked every
    ceil(sqrt(kappa)) steps, the steps over which the error falls by a constant factor."""
    root = (subproblem.lipschitz / smallest(subproblem.moduli)).sqrt()
    momentum = (root - 1.0) / (root + 1.0)
    period = root.ceil().long().squeeze(1)
    previous = point = start
    step = 0
    while True:
        due = step % period == 0
        if bool((due & subproblem.pending).any()) and subproblem.certify(
                point, subproblem.operator(point, due), due):
            return subproblem.solution
        ahead = add(point, add(point, previous, -1.0), momentum)
        previous, point = point, subproblem.project(
            add(ahead, subproblem.operator(ahead), -1.0 / subproblem.lipschitz))
        step += 1


def svrg(subproblem: Subproblem, start: Point) -> Point:
    """Prox-SVRG with the proximal term in the prox: per epoch the full data
    gradient at the snapshot (n; it certifies the snapshot), then m = 2n steps
    w <- prox(w - eta v), v = grad f_i(w) - grad f_i(snapshot) + full, i uniform, eta =
    1 / (4 l); the last iterate is the next snapshot. n + 2m = 5n evaluations per epoch."""
    return variance_reduced(subproblem, start, subproblem.regularizer,
                            dict.fromkeys(subproblem.names, 0.0),
                            1.0 / (4.0 * subproblem.smoothness), 2 * subproblem.n)


#: Xiao and Zhang 2014's Prox-SVRG at step eta = 1 / (20 l) (4 l eta = 1/5) and epochs of
#: m >= 50 kappa steps (kappa = l / m_sub): their Thm. 3.1's rate is then at most 3/4 + 1 / (4m).
XZ_STEP = 0.05
XZ_EPOCH = 50.0


def prox_svrg(subproblem: Subproblem, start: Point) -> Point:
    """Prox-SVRG exactly as Xiao and Zhang 2014 analyse it (their Alg. 1): per epoch the full
    data gradient at the snapshot (n; it certifies the snapshot), then m =
    :func:`prox_svrg_epoch` steps w <- prox(w - eta v), v = grad f_i(w) - grad f_i(snapshot) +
    full, i uniform, eta = 1 / (20 l); the next snapshot is the mean of the epoch's m iterates.
    n + 2m evaluations per epoch."""
    return variance_reduced(subproblem, start, subproblem.regularizer,
                            dict.fromkeys(subproblem.names, 0.0),
                            XZ_STEP / subproblem.smoothness, prox_svrg_epoch(subproblem),
                            average=True)


def prox_svrg_epoch(subproblem: Subproblem) -> torch.Tensor:
    """Per run (R,), Prox-SVRG's epoch length m = max(n, ceil(50 l / m_sub)), m_sub the
    subproblem's strong convexity (data plus proximal term)."""
    kappa = subproblem.smoothness / smallest(subproblem.moduli)
    return (XZ_EPOCH * kappa).ceil().long().clamp(min=subproblem.n).squeeze(1)


def prox_svrg_rate(subproblem: Subproblem) -> torch.Tensor:
    """Per run (R, 1), Xiao and Zhang 2014 Thm. 3.1's factor rho = 1 / (m_sub eta (1 - 4 l eta)
    m) + 4 l eta (m + 1) / ((1 - 4 l eta) m) by which an epoch shrinks E[P(w) - P*] (P the
    m_sub-strongly convex subproblem, f_i convex and l-smooth, the proximal term and the ball
    in the prox), hence the potential of :func:`prox_svrg_potential` (Markov stopping)."""
    eta = XZ_STEP / subproblem.smoothness
    shrink = 4.0 * subproblem.smoothness * eta
    epoch = prox_svrg_epoch(subproblem).unsqueeze(1).to(subproblem.radii.dtype)
    return (1.0 / (smallest(subproblem.moduli) * eta * (1.0 - shrink) * epoch)
            + shrink * (epoch + 1.0) / ((1.0 - shrink) * epoch))


def prox_svrg_potential(subproblem: Subproblem, start: Point) -> torch.Tensor:
    """Per run (R,), an a-priori bound on ||w_0 - w*||^2 <= 2 (P(w_0) - P*) / m_sub, the
    potential :func:`prox_svrg_rate` contracts (then E||w_s - w*||^2 <= rho^s times it, by
    strong convexity at the constrained minimizer): P(w_0) - P* <= ||grad P(w_0)|| ||w_0 - w*||
    (convexity) with ||grad P(w_0)|| <= L + ||p (w_0 - c)|| (L the problem's a-priori Lipschitz
    constant on the ball, p and c the proximal term's) and ||w_0 - w*|| <= ||w_0|| + R."""
    prox = subproblem.regularizer.operator(start)
    gap = sum((subproblem.problem.constants.lipschitz + prox[b].norm(dim=-1))
              * (z.norm(dim=-1) + subproblem.blocks[b].radius) for b, z in start.items())
    return 2.0 * gap / smallest(subproblem.moduli).squeeze(1)


def katyusha(subproblem: Subproblem, start: Point) -> Point:
    """Katyusha (Allen-Zhu 2017, Algorithm 1, option I) on F = f + psi with the data's strong
    convexity moved into psi (f_i - mu ||x||^2 / 2 is convex and l-smooth; psi = the shifted
    quadratic of modulus sigma = mu + p plus the ball): m = 2n, tau_2 = 1/2, tau_1 =
    min(sqrt(m sigma / (3 l)), 1/2), alpha = 1 / (3 tau_1 l); the next snapshot is the average
    of the epoch's y with weights (1 + alpha sigma)^j. Each epoch's full gradient (n) certifies
    its snapshot; n + 2m = 5n evaluations per epoch (every run's epoch has m steps; a certified
    run's further iterates are neither counted nor returned)."""
    psi = subproblem.shifted()
    blocks, smooth, inner = subproblem.blocks, subproblem.smoothness, 2 * subproblem.n
    data_moduli = subproblem.data_moduli
    sigma = smallest(psi.moduli)
    tau1 = (inner * sigma / (3.0 * smooth)).sqrt().clamp(max=0.5)
    tau2, alpha = 0.5, 1.0 / (3.0 * tau1 * smooth)
    exponents = torch.arange(inner, dtype=sigma.dtype) - (inner - 1)
    growth = torch.exp(exponents * torch.log1p(alpha * sigma))
    weights = (growth / growth.sum(1, keepdim=True)).T.unsqueeze(-1)
    snapshot = z = y = start
    while True:
        full = subproblem.data_operator(snapshot)
        if subproblem.certify(snapshot, add(full, subproblem.regularizer.operator(snapshot))):
            return subproblem.solution
        average = {b: torch.zeros_like(v) for b, v in snapshot.items()}
        steps = subproblem.epoch(snapshot, full, inner)
        for (example, correction, _), weight in zip(steps, weights, strict=True):
            x = {b: tau1 * z[b] + tau2 * snapshot[b] + (1.0 - tau1 - tau2) * y[b] for b in z}
            grad = subproblem.operator_rows(x, example)
            direction = {b: grad[b][:, 0] + correction[b] - data_moduli[b] * x[b] for b in x}
            z = psi.prox(blocks, add(z, direction, -alpha), alpha)
            y = psi.prox(blocks, add(x, direction, -1.0 / (3.0 * smooth)),
                         1.0 / (3.0 * smooth))
            average = add(average, y, weight)
        snapshot = average
