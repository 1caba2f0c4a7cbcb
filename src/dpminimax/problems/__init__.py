"""Synthetic problems with exact answers (BYOA spec 003 §5.3): objectives over named variable
blocks that the problem-generic methods (:mod:`dpminimax.algorithms.sgda`) optimize and the
synthetic-optimization task (:mod:`dpminimax.tasks.optimization`) measures exactly."""

from __future__ import annotations

from typing import Any

from dpminimax.problems.base import Block, Constants, Problem
from dpminimax.problems.games import BilinearGame, CscGame, QuadraticGame
from dpminimax.problems.least_squares import ConvexLeastSquares, LeastSquares
from dpminimax.problems.logistic import LogisticRegression, RidgeLogisticRegression

PROBLEMS: dict[str, type[Problem]] = {
    "p1_least_squares": LeastSquares,
    "p1_convex_least_squares": ConvexLeastSquares,
    "p2_logistic": LogisticRegression,
    "p2_sc_logistic": RidgeLogisticRegression,
    "g1_quadratic_game": QuadraticGame,
    "g2_bilinear_game": BilinearGame,
    "g4_csc_game": CscGame,
}


def get_problem(name: str, **kwargs: Any) -> Problem:
    """An instance of problem ``name`` (keyword arguments: its constructor's)."""
    try:
        cls = PROBLEMS[name]
    except KeyError:
        raise ValueError(f"unknown problem {name!r}; known problems: {sorted(PROBLEMS)}"
                         ) from None
    return cls(**kwargs)


__all__ = ["PROBLEMS", "BilinearGame", "Block", "Constants", "ConvexLeastSquares", "CscGame",
           "LeastSquares", "LogisticRegression", "Problem", "QuadraticGame",
           "RidgeLogisticRegression", "get_problem"]
