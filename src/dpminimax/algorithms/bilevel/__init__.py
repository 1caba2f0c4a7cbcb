"""DP bilevel optimisation: Alg. 1's penalty methods, their variants and the grid baselines."""

from __future__ import annotations

from dpminimax.algorithms.base import Method
from dpminimax.algorithms.bilevel.bilevel_grid import DpGrid, FixedOmega, NonPrivateGrid
from dpminimax.algorithms.bilevel.dp_bilevel import (
    DpAid,
    DpBilevel,
    DpBilevelGd,
    DpBilevelLocGd,
    DpBilevelLocGdWarm,
    DpBilevelMinibatch,
    DpBilevelMinibatchLocSgd,
    DpBilevelPublicOuter,
    NpAid,
    NpPen,
    Sec7PaperSign,
)
from dpminimax.algorithms.bilevel.ps_tuning import PsTuning

METHODS: tuple[type[Method], ...] = (
    DpBilevel, DpBilevelLocGd, DpBilevelGd, DpBilevelLocGdWarm, NpPen, NpAid, DpBilevelPublicOuter,
    Sec7PaperSign, DpGrid, FixedOmega, NonPrivateGrid, DpAid, DpBilevelMinibatch,
    DpBilevelMinibatchLocSgd, PsTuning)
