"""NSEG: noisy stochastic extragradient (Boob & Guzmán 2021, arXiv:2104.02988, Alg. 1, its
sampling-with-replacement variant; a BYOA baseline), and its non-private twin.

Each iteration t makes two noisy projected steps from z_t, each over its own fresh batch:

    z_{t+1/2} = Pi(z_t - eta G(z_t; B_t)),  z_{t+1} = Pi(z_t - eta G(z_{t+1/2}; B'_t))

with G the clipped per-example gradients summed over the batch plus Gaussian noise, over qn
(descent on minimized blocks, ascent on maximized ones): one Gaussian release per block and
batch (the step of DP-SGDA,
:meth:`~dpminimax.algorithms.minimax.sgda.SgdaProgram.move`). The output is the average of the
extrapolated points z_{t+1/2} (the ergodic iterate of extragradient analyses). The 2T batches'
releases compose under one sigma calibrated to (epsilon, delta) by the accountant (as for
every baseline). Deviation: batches are Poisson(q) (what our accountant amplifies), not drawn with
replacement. The runs' ``counters`` count every example of both batches.

``schedule="boob_guzman2021"`` is our reading of the paper's weak-gap
setting, chosen to give its Table 1 cost O(n^2): T = n iterations (balancing the optimization
error D^2 / (eta T) against the stability term eta L^2 T / n at eta ~ D / (L sqrt(n))), batches
of n draws with replacement, i.e. the Poisson rate q = 1 - (1 - 1/n)^n (each example's
inclusion probability under n draws, ~0.63), and eta = min(1 / l, (D / L) / max(sqrt(n),
sqrt(d log(1 / delta)) / eps)) (extragradient needs eta <= 1 / l). The paper's exact constants
were not available to us. ``manual``: q = batch_size / n, T = ceil(epochs / (2q)), eta = lr.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from dpminimax.algorithms.base import RunSpec, nonprivate_twin
from dpminimax.algorithms.minimax.sgda import DpSgda, Schedule, SgdaProgram
from dpminimax.algorithms.params import Check, one_of
from dpminimax.problems import Problem

THEORY = "boob_guzman2021"


class Nseg(DpSgda):
    """Noisy stochastic extragradient over named blocks (module docstring)."""

    name: ClassVar[str] = "nseg"
    label: ClassVar[str] = "NSEG"
    paper: ClassVar[str] = "byoa"
    source: ClassVar[str] = "Boob & Guzmán 2021, Alg. 1 (BYOA baseline B7)"
    parameters: ClassVar[dict[str, Any]] = {**DpSgda.parameters, "problem": "g2_bilinear_game"}
    checks: ClassVar[dict[str, Check]] = {**DpSgda.checks, "schedule": one_of("manual", THEORY)}
    batches_per_step: ClassVar[int] = 2

    def schedule(self, params: dict[str, Any], problem: Problem, n: int,
                 run: RunSpec) -> Schedule:
        if params["schedule"] == "manual":
            return super().schedule(params, problem, n, run)
        constants = problem.constants
        dim = sum(block.dim for block in problem.blocks)
        privacy = math.sqrt(dim * math.log(1.0 / run.delta)) / run.epsilon
        lr = min(1.0 / constants.smoothness, constants.diameter / constants.lipschitz
                 / max(math.sqrt(n), privacy))
        return 1.0 - (1.0 - 1.0 / n) ** n, n, lr

    @property
    def program_class(self) -> type[SgdaProgram]:
        return NsegProgram


class NsegProgram(SgdaProgram):
    """R runs of NSEG: :class:`SgdaProgram` whose step is an extragradient step and whose
    output averages the extrapolated points."""

    def step(self) -> None:
        half = self.move(self.iterate, self.iterate)
        self.iterate = self.move(self.iterate, half)
        self.record(half)


Seg = nonprivate_twin(
    Nseg, "Seg", name="nseg_nonprivate",
    label="Stochastic extragradient (non-private, synthetic problems)",
    doc="NSEG without clipping or noise (epsilon = inf).", fixed={"clip": math.inf})
