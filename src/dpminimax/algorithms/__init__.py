"""Training methods, one module each; :data:`METHODS` maps a method name to its class."""

from __future__ import annotations

from dpminimax.algorithms.base import FitResult, Method, RunSpec, expand_runs, noise_off_control
from dpminimax.algorithms.bilevel_grid import DpGrid, FixedOmega, NonPrivateGrid
from dpminimax.algorithms.double_spider import (
    DpDoubleSpider,
    DpDoubleSpiderControl,
    DpSgdaDro,
    DpSgdaDroControl,
    NonPrivateDoubleSpider,
    PrivateDiffDro,
    PrivateDiffDroControl,
)
from dpminimax.algorithms.dp_bilevel import (
    BILEVEL_DIAGNOSTICS,
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
from dpminimax.algorithms.dp_sgd import DpSgd, NonPrivateSgd
from dpminimax.algorithms.dpfermi import DpFermi, DpFermiCode, DpFermiPaper, NonPrivateFermi
from dpminimax.algorithms.jagielski2019 import Jagielski2019, Jagielski2019NonPrivate
from dpminimax.algorithms.nseg import Nseg, Seg
from dpminimax.algorithms.output_perturbation import (
    ExactSolution,
    OutputPerturbation,
    RidgeOutputPerturbation,
)
from dpminimax.algorithms.phased_minimax import (
    CscExact,
    CscOutputPerturbation,
    PhasedMinimaxExact,
    PhasedMinimaxOutputPerturbation,
)
from dpminimax.algorithms.phased_output_perturbation import PhasedExact, PhasedOutputPerturbation
from dpminimax.algorithms.phased_sgd import PhasedSgd, PhasedSgdNonPrivate
from dpminimax.algorithms.racodp import NonPrivateSgda, RacoDp
from dpminimax.algorithms.recursive_spider import (
    DpRecursiveSpider,
    DpRecursiveSpiderControl,
    NonPrivateRecursiveSpider,
    Scdro,
)
from dpminimax.algorithms.sgda import DpSgda, DpSgdBassily, Sgda
from dpminimax.algorithms.tran2021a import Tran2021a, Tran2021aNonPrivate
from dpminimax.algorithms.tran2021b import Tran2021b, Tran2021bNonPrivate

METHODS: dict[str, type[Method]] = {
    cls.name: cls for cls in (DpSgd, NonPrivateSgd, RacoDp, NonPrivateSgda, DpFermi,
                              DpFermiPaper, DpFermiCode, NonPrivateFermi, Jagielski2019,
                              Jagielski2019NonPrivate, Tran2021a, Tran2021aNonPrivate,
                              Tran2021b, Tran2021bNonPrivate, DpSgda, Sgda,
                              OutputPerturbation, ExactSolution, PhasedOutputPerturbation,
                              PhasedExact, PhasedMinimaxOutputPerturbation, PhasedMinimaxExact,
                              CscOutputPerturbation, CscExact, RidgeOutputPerturbation,
                              DpBilevel, DpBilevelLocGd, DpBilevelGd, DpBilevelLocGdWarm,
                              NpPen, NpAid,
                              DpDoubleSpider, NonPrivateDoubleSpider, DpSgdaDro, PrivateDiffDro,
                              DpRecursiveSpider, NonPrivateRecursiveSpider, Scdro,
                              DpDoubleSpiderControl, DpSgdaDroControl, PrivateDiffDroControl,
                              DpRecursiveSpiderControl, Nseg, Seg,
                              PhasedSgd, PhasedSgdNonPrivate, DpSgdBassily,
                              DpBilevelPublicOuter, Sec7PaperSign, DpGrid, FixedOmega,
                              NonPrivateGrid, DpAid, DpBilevelMinibatch,
                              DpBilevelMinibatchLocSgd)
}


#: Diagnostics a workflow may run beside the methods: they take a privacy target but are NOT
#: private, and their records say so (guarantee not covered); outside :data:`METHODS`, whose
#: conformance suite holds every method to its plan's privacy.
DIAGNOSTICS: dict[str, type[Method]] = dict(BILEVEL_DIAGNOSTICS)


#: The noiseless clipped control of every private method, ``<name>_noise_off``
#: (:func:`~dpminimax.algorithms.base.noise_off_control`): planned at the run's epsilon as the
#: private method, every release without noise, its records claiming no privacy. Outside
#: :data:`METHODS`, whose conformance suite and audits hold every method to its plan's privacy.
CONTROLS: dict[str, type[Method]] = {
    control.name: control for control in (noise_off_control(cls) for cls in METHODS.values()
                                          if cls.private)
}


class UnknownMethodError(ValueError):
    """A configuration named a method that does not exist."""


def get_method(name: str) -> Method:
    """An instance of the method (or diagnostic, or noiseless control) called ``name``."""
    try:
        return {**METHODS, **DIAGNOSTICS, **CONTROLS}[name]()
    except KeyError:
        raise UnknownMethodError(
            f"unknown method {name!r}; known methods: {sorted(METHODS)}; diagnostics (not "
            f"private): {sorted(DIAGNOSTICS)}; noiseless controls: <private method>_noise_off"
        ) from None


__all__ = ["CONTROLS", "DIAGNOSTICS", "METHODS", "FitResult", "Method", "RunSpec",
           "UnknownMethodError", "expand_runs", "get_method"]
