"""Base solvers for the strongly-monotone finite-sum saddle-point problems of BYOA Algs. 3-5
(Sec. 5): full-batch extragradient (Tseng 1995; the
generic view: the regularizer inside the operator) and the SVRG of Palaniappan and Bach 2016
(the prox view: the regularizer and the data's own strong monotonicity in the
prox). Both also solve minimization problems (one block, the VI of the gradient). Each solves
R runs at once and stops a run only on its certificate (:func:`~dpminimax.solvers.base.
certificate`) at a point whose full operator it computes (counted); per-run constants are
columns (R, 1).
"""

from __future__ import annotations

import torch

from dpminimax.problems.base import Point
from dpminimax.solvers.base import Subproblem, add, smallest, variance_reduced


def extragradient(subproblem: Subproblem, start: Point) -> Point:
    """z_half = Pi(z - eta G(z)), z <- Pi(z - eta G(z_half)) with eta = 1 / (2 L_G), L_G = l +
    the largest proximal modulus. G(z) of each iteration certifies z: the count is
    2n per iteration plus n for the last certificate."""
    step = 0.5 / subproblem.lipschitz
    point = start
    while True:
        operator = subproblem.operator(point)
        if subproblem.certify(point, operator):
            return subproblem.solution
        half = subproblem.project(add(point, operator, -step))
        point = subproblem.project(add(point, subproblem.operator(half), -step))


def extragradient_rate(subproblem: Subproblem) -> torch.Tensor:
    """Per run (R, 1), the factor 1 - min(m, 3 L_G / 4) / (2 L_G) by which an extragradient
    iteration (eta = 1 / (2 L_G)) shrinks ||z - z*||^2 (Markov stopping): the
    projection inequalities give ||z+ - z*||^2 <= ||z - z*||^2 - (1 - eta^2 L_G^2)
    ||w - z||^2 - 2 eta m' ||w - z*||^2 at the half step w, any m' <= m; with ||w - z*||^2 >=
    ||z - z*||^2 / 2 - ||w - z||^2 the factor is 1 - eta m' once 1 - eta^2 L_G^2 >=
    2 eta m'."""
    least = torch.minimum(smallest(subproblem.moduli), 0.75 * subproblem.lipschitz)
    return 1.0 - least / (2.0 * subproblem.lipschitz)


def palaniappan_bach_svrg(subproblem: Subproblem, start: Point) -> Point:
    """SVRG for saddle points with the strongly monotone part in the prox: the
    data operator minus its own moduli, B'_i(z) = B_i(z) - mu_b z_b (monotone, Lipschitz l',
    :attr:`~dpminimax.solvers.base.Subproblem.shifted_smoothness`), and the prox of the shifted
    quadratic (modulus m_b = mu_b + p_b). Per epoch the full data operator at the snapshot (n;
    it certifies the snapshot), then m = max(n, ceil(8 l'^2 / m_min^2)) steps
    z <- prox(z - eta g), g = B'_i(z) - B'_i(snapshot) + B'(snapshot), eta = m_min / (4 l'^2);
    the last iterate is the next snapshot. n + 2m evaluations per epoch (m_min, eta and m per
    run: a run with fewer steps than another stays put for the rest of the epoch)."""
    prox, smooth = subproblem.shifted(), subproblem.shifted_smoothness
    least = smallest(prox.moduli)
    inner = (8.0 * smooth ** 2 / least ** 2).ceil().long().clamp(min=subproblem.n).squeeze(1)
    return variance_reduced(subproblem, start, prox, subproblem.data_moduli,
                            least / (4.0 * smooth ** 2), inner)
