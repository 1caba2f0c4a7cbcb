"""Base solvers for the strongly-monotone finite-sum saddle-point problems of BYOA Algs. 3-5
(spec 003 §2.8, §7 rows 14 and 16): full-batch extragradient (Tseng 1995; spec §2.9c, the
generic view: the regularizer inside the operator) and the SVRG of Palaniappan and Bach 2016
(spec §2.9d, the prox view: the regularizer and the data's own strong monotonicity in the
prox). Both also solve minimization problems (one block, the VI of the gradient). Each stops
only on the certificate (:func:`~dpminimax.solvers.base.certificate`) at a point whose full
operator it computes (counted).
"""

from __future__ import annotations

import math

import torch

from dpminimax.problems.base import Point
from dpminimax.solvers.base import Subproblem, Target, add, variance_reduced


def extragradient(subproblem: Subproblem, target: Target, start: Point,
                  generator: torch.Generator) -> Point:
    """z_half = Pi(z - eta G(z)), z <- Pi(z - eta G(z_half)) with eta = 1 / (2 L_G), L_G = l +
    the largest proximal modulus (spec §2.9c). G(z) of each iteration certifies z: the count is
    2n per iteration plus n for the last certificate."""
    step = 0.5 / subproblem.lipschitz
    point = start
    while True:
        operator = subproblem.operator(point)
        if subproblem.certified(point, operator, target):
            return point
        half = subproblem.project(add(point, operator, -step))
        point = subproblem.project(add(point, subproblem.operator(half), -step))


def palaniappan_bach_svrg(subproblem: Subproblem, target: Target, start: Point,
                          generator: torch.Generator) -> Point:
    """SVRG for saddle points with the strongly monotone part in the prox (spec §2.9d): the
    data operator minus its own moduli, B'_i(z) = B_i(z) - mu_b z_b (monotone, Lipschitz l',
    :attr:`~dpminimax.solvers.base.Subproblem.shifted_smoothness`), and the prox of the shifted
    quadratic (modulus m_b = mu_b + p_b). Per epoch the full data operator at the snapshot (n;
    it certifies the snapshot), then m = max(n, ceil(8 l'^2 / m_min^2)) steps
    z <- prox(z - eta g), g = B'_i(z) - B'_i(snapshot) + B'(snapshot), eta = m_min / (4 l'^2);
    the last iterate is the next snapshot. n + 2m evaluations per epoch."""
    prox, smooth = subproblem.shifted(), subproblem.shifted_smoothness
    smallest = min(prox.moduli.values())
    return variance_reduced(subproblem, target, start, generator, prox, subproblem.data_moduli,
                            smallest / (4.0 * smooth ** 2),
                            max(subproblem.n, math.ceil(8.0 * smooth ** 2 / smallest ** 2)))
