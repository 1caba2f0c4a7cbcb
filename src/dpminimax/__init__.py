"""dpminimax: differentially private constrained and min-max learning, reproduced.

The Python API (:mod:`dpminimax.estimator`, imported on first use so that ``import dpminimax``
stays cheap): ``dpminimax.fit(method, X, y, s, epsilon=..., delta=..., **params)`` trains any
registered method on your own arrays or DataFrame, or on a problem named by ``X`` for the
methods whose runs draw their own sample; ``dpminimax.methods()`` lists the methods.
"""

__version__ = "0.1.0"

#: Public names loaded lazily from :mod:`dpminimax.estimator`.
_API = ("FitSummary", "FittedModel", "FrameEncoder", "RunAccounting", "fit", "methods",
        "prepared_from_arrays")


def __getattr__(name: str):
    if name in _API:
        from dpminimax import estimator
        return getattr(estimator, name)
    raise AttributeError(f"module 'dpminimax' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API} - {"_API"})


__all__ = ["__version__", *_API]
