"""KL-regularised distributionally robust optimisation (DP-DRO): SPIDER methods and baselines."""

from __future__ import annotations

from dpminimax.algorithms.base import Method
from dpminimax.algorithms.dro.double_spider import (
    DpDoubleSpider,
    DpDoubleSpiderControl,
    DpSgdaDro,
    DpSgdaDroControl,
    NonPrivateDoubleSpider,
    PrivateDiffDro,
    PrivateDiffDroControl,
)
from dpminimax.algorithms.dro.recursive_spider import (
    DpRecursiveSpider,
    DpRecursiveSpiderControl,
    NonPrivateRecursiveSpider,
    Scdro,
)

METHODS: tuple[type[Method], ...] = (
    DpDoubleSpider, NonPrivateDoubleSpider, DpSgdaDro, PrivateDiffDro, DpRecursiveSpider,
    NonPrivateRecursiveSpider, Scdro, DpDoubleSpiderControl, DpSgdaDroControl,
    PrivateDiffDroControl, DpRecursiveSpiderControl)
