"""Convex-concave min-max (BYOA): output perturbation, its phased forms and the SGDA baselines."""

from __future__ import annotations

from dpminimax.algorithms.base import Method
from dpminimax.algorithms.minimax.nseg import Nseg, Seg
from dpminimax.algorithms.minimax.output_perturbation import (
    ExactSolution,
    OutputPerturbation,
    RidgeOutputPerturbation,
)
from dpminimax.algorithms.minimax.phased_minimax import (
    CscExact,
    CscOutputPerturbation,
    PhasedMinimaxExact,
    PhasedMinimaxOutputPerturbation,
)
from dpminimax.algorithms.minimax.phased_output_perturbation import (
    PhasedExact,
    PhasedOutputPerturbation,
)
from dpminimax.algorithms.minimax.phased_sgd import PhasedSgd, PhasedSgdNonPrivate
from dpminimax.algorithms.minimax.sgda import DpSgda, DpSgdBassily, Sgda
from dpminimax.algorithms.minimax.spider_game import (
    DoubleSpiderGame,
    DpDoubleSpiderGame,
    PrivateDiffGame,
    PrivateDiffGameNonPrivate,
)

METHODS: tuple[type[Method], ...] = (
    DpSgda, Sgda, DpSgdBassily, Nseg, Seg, OutputPerturbation, ExactSolution,
    RidgeOutputPerturbation, PhasedOutputPerturbation, PhasedExact, PhasedMinimaxOutputPerturbation,
    PhasedMinimaxExact, CscOutputPerturbation, CscExact, PhasedSgd, PhasedSgdNonPrivate,
    DpDoubleSpiderGame, DoubleSpiderGame, PrivateDiffGame, PrivateDiffGameNonPrivate)
