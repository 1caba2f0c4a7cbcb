"""Fair learning under demographic constraints: RaCO-DP, DP-FERMI and their baselines."""

from __future__ import annotations

from dpminimax.algorithms.base import Method
from dpminimax.algorithms.fair.dpfermi import DpFermi, DpFermiCode, DpFermiPaper, NonPrivateFermi
from dpminimax.algorithms.fair.jagielski2019 import Jagielski2019, Jagielski2019NonPrivate
from dpminimax.algorithms.fair.racodp import NonPrivateSgda, RacoDp
from dpminimax.algorithms.fair.tran2021a import Tran2021a, Tran2021aNonPrivate
from dpminimax.algorithms.fair.tran2021b import Tran2021b, Tran2021bNonPrivate

METHODS: tuple[type[Method], ...] = (
    RacoDp, NonPrivateSgda, DpFermi, DpFermiPaper, DpFermiCode, NonPrivateFermi, Jagielski2019,
    Jagielski2019NonPrivate, Tran2021a, Tran2021aNonPrivate, Tran2021b, Tran2021bNonPrivate)
