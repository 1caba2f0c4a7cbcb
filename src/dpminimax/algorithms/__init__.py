"""Training methods, one module each, grouped by family (subpackage); :data:`METHODS` maps a
method name to its class, :data:`FAMILIES` a family to its method names."""

from __future__ import annotations

from dpminimax.algorithms import baselines, bilevel, dro, fair, minimax
from dpminimax.algorithms.base import FitResult, Method, RunSpec, expand_runs, noise_off_control
from dpminimax.algorithms.bilevel.dp_bilevel import BILEVEL_DIAGNOSTICS

_FAMILIES = (baselines, fair, minimax, bilevel, dro)

METHODS: dict[str, type[Method]] = {
    cls.name: cls for family in _FAMILIES for cls in family.METHODS
}

#: The method names of each family (subpackage): every method of :data:`METHODS` is in exactly one.
FAMILIES: dict[str, tuple[str, ...]] = {
    family.__name__.rsplit(".", 1)[-1]: tuple(cls.name for cls in family.METHODS)
    for family in _FAMILIES
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


#: Old names of non-private twins (issue #41: a twin is ``<private method>_nonprivate``), refused
#: with the new name rather than trained under the old one.
RENAMED: dict[str, str] = {
    "nonprivate": "dp_sgd_nonprivate", "sgda_nonprivate": "racodp_nonprivate",
    "sgda": "dp_sgda_nonprivate", "seg": "nseg_nonprivate",
    "fermi_nonprivate": "dpfermi_nonprivate", "double_spider": "dp_double_spider_nonprivate",
    "recursive_spider": "dp_recursive_spider_nonprivate",
}


def renamed_message(name: str) -> str:
    """The one-line refusal of an old twin name (:data:`RENAMED`), naming the new one."""
    return f"unknown method {name!r}: renamed to {RENAMED[name]!r}"


class UnknownMethodError(ValueError):
    """A configuration named a method that does not exist."""


def get_method(name: str) -> Method:
    """An instance of the method (or diagnostic, or noiseless control) called ``name``."""
    try:
        return {**METHODS, **DIAGNOSTICS, **CONTROLS}[name]()
    except KeyError:
        if name in RENAMED:
            raise UnknownMethodError(renamed_message(name)) from None
        raise UnknownMethodError(
            f"unknown method {name!r}; known methods: {sorted(METHODS)}; diagnostics (not "
            f"private): {sorted(DIAGNOSTICS)}; noiseless controls: <private method>_noise_off"
        ) from None


__all__ = ["CONTROLS", "DIAGNOSTICS", "FAMILIES", "METHODS", "RENAMED", "FitResult", "Method",
           "RunSpec", "UnknownMethodError", "expand_runs", "get_method",
           "renamed_message"]
