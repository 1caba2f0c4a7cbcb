"""Synthetic problems with exact answers (our BYOA testbeds): objectives over named variable
blocks that the problem-generic methods (:mod:`dpminimax.algorithms.minimax.sgda`) optimize and the
synthetic-optimization task (:mod:`dpminimax.tasks.optimization`) measures exactly; P-DRO
(``kl_dro_logistic``) is paper 004's Eq. (3) for a linear model."""

from __future__ import annotations

from typing import Any

from dpminimax.problems.base import Block, Constants, Problem
from dpminimax.problems.bilevel import BilevelConstants, BilevelProblem, FixedSample
from dpminimax.problems.games import BilinearGame, CscGame, QuadraticGame
from dpminimax.problems.group_ridge import GroupRidgeTuning
from dpminimax.problems.kl_dro import KlDroLogistic
from dpminimax.problems.leak_example import LeakExample
from dpminimax.problems.least_squares import ConvexLeastSquares, LeastSquares
from dpminimax.problems.linear_response import LinearResponseBilevel
from dpminimax.problems.logistic import LogisticRegression, RidgeLogisticRegression
from dpminimax.problems.logistic_tuning import LogisticTuning
from dpminimax.problems.ridge_tuning import RidgeTuning
from dpminimax.problems.smoothness import LogCoshRegression
from dpminimax.problems.softplus_game import SoftplusGame

PROBLEMS: dict[str, type[Problem]] = {
    "p1_least_squares": LeastSquares,
    "p1_convex_least_squares": ConvexLeastSquares,
    "p2_logistic": LogisticRegression,
    "p2_sc_logistic": RidgeLogisticRegression,
    "p3_log_cosh": LogCoshRegression,
    "g1_quadratic_game": QuadraticGame,
    "g2_bilinear_game": BilinearGame,
    "g3_softplus_game": SoftplusGame,
    "g4_csc_game": CscGame,
    "kl_dro_logistic": KlDroLogistic,
}

#: Bilevel problems (our DP bilevel testbeds): P-A, P-B (group-ridge multi-hyperparameter
#: tuning), P-C (Section 7's ridge and logistic tuning) and P-D (Example 3.1).
BILEVEL_PROBLEMS: dict[str, type[BilevelProblem]] = {
    "pa_linear_response": LinearResponseBilevel,
    "pb_group_ridge": GroupRidgeTuning,
    "pc_ridge_tuning": RidgeTuning,
    "pc_logistic_tuning": LogisticTuning,
    "pd_leak_example": LeakExample,
}


def get_problem(name: str, **kwargs: Any) -> Problem:
    """An instance of problem ``name`` (keyword arguments: its constructor's)."""
    try:
        cls = PROBLEMS[name]
    except KeyError:
        raise ValueError(f"unknown problem {name!r}; known problems: {sorted(PROBLEMS)}"
                         ) from None
    return cls(**kwargs)


def get_bilevel_problem(name: str, **kwargs: Any) -> BilevelProblem:
    """An instance of bilevel problem ``name`` (keyword arguments: its constructor's)."""
    try:
        cls = BILEVEL_PROBLEMS[name]
    except KeyError:
        raise ValueError(f"unknown bilevel problem {name!r}; known: {sorted(BILEVEL_PROBLEMS)}"
                         ) from None
    return cls(**kwargs)


__all__ = ["BILEVEL_PROBLEMS", "PROBLEMS", "BilevelConstants", "BilevelProblem",
           "BilinearGame", "Block", "Constants", "ConvexLeastSquares", "CscGame", "FixedSample",
           "GroupRidgeTuning", "KlDroLogistic", "LeakExample", "LeastSquares",
           "LinearResponseBilevel", "LogCoshRegression", "LogisticRegression", "Problem",
           "QuadraticGame", "RidgeLogisticRegression", "RidgeTuning", "SoftplusGame",
           "get_bilevel_problem", "get_problem"]
