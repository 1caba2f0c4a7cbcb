"""The Python API: train any registered method in memory, on the kind of input its task takes.

``fit(method, X, y, s, epsilon=..., delta=..., seeds=..., **params)`` dispatches on the
method's task. A method that trains on data (fair classification, KL-DRO classification) takes
your arrays or DataFrame, built into a :class:`~dpminimax.data.PreparedDataset` (no files); a
method whose runs draw their own sample from a problem (synthetic min-max / optimization
problems, bilevel problems) takes the problem's name. Every seed x parameter combination trains
as one batched program (as a workflow job does) and a :class:`FitSummary` comes back: the
metrics table the workflow writes (``metrics.parquet``: one row per run), each run's privacy
accounting and, for data methods, the trained model (``predict`` / ``predict_proba``).
DataFrame columns are encoded as the built-in tabular loaders encode theirs
(:mod:`dpminimax.data.tabular`: numeric columns z-scored with train-split statistics, other
columns one-hot over the levels of the whole table; the label and the sensitive attribute are
not features); numpy features are used as given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
from dp_accounting.dp_event import DpEvent

from dpminimax.algorithms import METHODS, FitResult, RunSpec, expand_runs, get_method
from dpminimax.api import training
from dpminimax.data import PreparedDataset
from dpminimax.data.splits import train_test_indices
from dpminimax.data.tabular import one_hot, zscore
from dpminimax.epsilon import Epsilon
from dpminimax.plugins import load_plugins
from dpminimax.privacy.events import event_from_dict

#: Fairness metrics of the run table; undefined (NaN) when no sensitive attribute is given.
FAIRNESS_COLUMNS = ("dp_violation", "eo_violation", "train_dp_violation", "train_eo_violation")
#: The delta recorded for a non-private run given none (its epsilon is inf: no guarantee; the
#: accountant still wants a delta in (0, 1)).
NON_PRIVATE_DELTA = 1e-5
#: The model of a method with a ``model`` parameter (DRO's default is a CNN for images) on the
#: tabular features :func:`fit` builds: the only one they take
#: (:func:`dpminimax.models.network.batched_model`).
TABULAR_MODEL = "logistic_regression"


def needs_sensitive(method: str) -> bool:
    """Whether ``method`` uses the sensitive attribute in training (all but DP-SGD and its
    non-private twin, which only evaluate fairness when ``s`` is given)."""
    load_plugins()
    return get_method(method).uses_sensitive_attribute


def methods() -> pd.DataFrame:
    """The registered methods (index: name) with their label, whether they are private, their
    task, whether they need a sensitive attribute and their parameter defaults (plugins'
    included: :func:`dpminimax.plugins.load_plugins`)."""
    load_plugins()
    return pd.DataFrame([
        {"name": name, "label": cls.label, "private": cls.private, "task": cls.task.name,
         "needs_sensitive": needs_sensitive(name), "parameters": dict(cls.parameters)}
        for name, cls in METHODS.items()
    ]).set_index("name")


@dataclass(frozen=True)
class FrameEncoder:
    """The feature encoding of a DataFrame, fitted on the training rows and reusable on new
    frames with the same columns (:meth:`transform`)."""

    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    levels: Mapping[str, tuple[Any, ...]]
    feature_names: tuple[str, ...]
    train_numeric: np.ndarray = field(repr=False)  # the train rows that fix the z-scores

    @classmethod
    def fit(cls, frame: pd.DataFrame, train_rows: np.ndarray,
            categorical: Sequence[str] | None = None) -> tuple[FrameEncoder, np.ndarray]:
        """The encoder of ``frame`` (z-scores from ``train_rows``) and ``frame`` encoded."""
        if categorical is None:
            categorical = [c for c in frame.columns if not _is_numeric(frame[c])]
        missing = sorted(set(categorical) - set(frame.columns), key=str)
        if missing:
            raise ValueError(f"categorical columns {missing} are not in the DataFrame")
        numeric = [c for c in frame.columns if c not in set(categorical)]
        for name in numeric:
            if not _is_numeric(frame[name]):
                raise ValueError(f"column {name!r} is not numeric: list it in categorical=")
        values = frame[numeric].to_numpy(dtype=np.float64)
        encoded = [one_hot(frame[name]) for name in categorical]
        x = np.hstack([zscore(values, train_rows), *(m for m, _ in encoded)]).astype(np.float32)
        encoder = cls(
            numeric=tuple(numeric), categorical=tuple(categorical),
            levels={name: tuple(sorted(frame[name].unique().tolist())) for name in categorical},
            feature_names=tuple(numeric) + tuple(n for _, names in encoded for n in names),
            train_numeric=values[train_rows],
        )
        return encoder, x

    def transform(self, frame: pd.DataFrame) -> np.ndarray:
        """``frame`` encoded as the training data was (float32, one row per row); a level not
        seen in training is an error naming it."""
        columns = self.numeric + self.categorical
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValueError(f"the DataFrame lacks the feature columns {missing}")
        if frame[list(columns)].isna().any().any():
            raise ValueError("the DataFrame has missing values: drop or fill them first")
        reference = len(self.train_numeric)
        numeric = zscore(np.vstack([self.train_numeric,
                                    frame[list(self.numeric)].to_numpy(dtype=np.float64)]),
                         np.arange(reference))[reference:]
        blocks = [numeric]
        for name in self.categorical:
            known = self.levels[name]
            unseen = sorted(set(frame[name].unique().tolist()) - set(known), key=str)
            if unseen:
                raise ValueError(f"column {name!r} has levels not seen in training: {unseen}")
            column = pd.concat([pd.Series(known, dtype=object), frame[name].astype(object)],
                               ignore_index=True).rename(name)
            blocks.append(one_hot(column)[0][len(known):])
        return np.hstack(blocks).astype(np.float32)


@dataclass(frozen=True)
class RunAccounting:
    """One run's privacy record: epsilon spent, delta, the accountant, the neighbouring relation
    and the DpEvent (None where a closed-form theorem, not an event, gives epsilon: DP-FERMI's
    sensitive-attribute privacy); ``record`` is the full entry of ``accounting.json``."""

    run_id: str
    epsilon: float
    delta: float
    accountant: str
    neighboring_relation: str
    event: DpEvent | None
    record: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True)
class FittedModel:
    """The trained runs of one :func:`fit` (a leading run axis), predicting original labels."""

    fit_result: FitResult = field(repr=False)
    label_levels: tuple[Any, ...]
    encoder: FrameEncoder | None = field(default=None, repr=False)

    @property
    def runs(self) -> list[RunSpec]:
        return self.fit_result.runs

    def predict(self, X: Any, run: int | None = None) -> np.ndarray:
        """Predicted labels: shape (n,) for one run (or ``run=r``), (runs, n) for several."""
        ids = self.fit_result.model.predict(self.fit_result.state, self._inputs(X)).cpu().numpy()
        return self._select(np.asarray(self.label_levels)[ids], run)

    def predict_proba(self, X: Any, run: int | None = None) -> np.ndarray:
        """Class probabilities (columns in the order of ``label_levels``): shape (n, classes)
        for one run (or ``run=r``), (runs, n, classes) for several. For the randomized mixture
        of Jagielski et al. (2019) it is the probability that the mixture predicts each class."""
        model, state, x = self.fit_result.model, self.fit_result.state, self._inputs(X)
        with torch.no_grad():
            if hasattr(model, "vote_fraction"):
                positive = model.vote_fraction(state, x)
            else:
                logits = model.logits(state, x)
                positive = torch.sigmoid(logits[..., 0]) if logits.shape[-1] == 1 else None
            probs = (torch.stack([1 - positive, positive], dim=-1) if positive is not None
                     else torch.softmax(logits, dim=-1))
        return self._select(probs.cpu().numpy(), run)

    def _inputs(self, X: Any) -> torch.Tensor:
        if isinstance(X, pd.DataFrame):
            if self.encoder is None:
                raise TypeError("this model was trained on arrays: pass a numpy array")
            X = self.encoder.transform(X)
        device = next(iter(self.fit_result.state.values())).device
        return torch.as_tensor(np.asarray(X, dtype=np.float32), device=device)

    def _select(self, values: np.ndarray, run: int | None) -> np.ndarray:
        if run is not None:
            return values[run]
        return values[0] if len(values) == 1 else values


@dataclass(frozen=True)
class FitSummary:
    """What :func:`fit` returns: ``metrics`` (the workflow's run table: one row per run, the
    task's metrics, ``p_*`` parameters, ``epsilon_spent``), ``accounting`` (one
    :class:`RunAccounting` per run) and ``fits`` (the trained batched programs: model, state,
    runs). A data method's summary also has ``model`` (predicts) and the ``data`` trained on;
    a problem method's has ``problem`` (its name) and neither (its runs draw their own sample)."""

    method: str
    model: FittedModel | None
    metrics: pd.DataFrame
    accounting: list[RunAccounting]
    data: PreparedDataset | None = field(default=None, repr=False)
    problem: str | None = None
    fits: tuple[FitResult, ...] = field(default=(), repr=False)

    @property
    def encoder(self) -> FrameEncoder | None:
        return None if self.model is None else self.model.encoder

    def predict(self, X: Any, run: int | None = None) -> np.ndarray:
        """:meth:`FittedModel.predict`."""
        return self._model().predict(X, run)

    def predict_proba(self, X: Any, run: int | None = None) -> np.ndarray:
        """:meth:`FittedModel.predict_proba`."""
        return self._model().predict_proba(X, run)

    def _model(self) -> FittedModel:
        if self.model is None:
            raise TypeError(f"method {self.method!r} solved problem {self.problem!r}: nothing "
                            "to predict; read .metrics (its errors) or .fits (the states)")
        return self.model


def fit(method: str, X: Any = None, y: Any = None, s: Any = None, *,
        epsilon: float | str | None = None, delta: float | None = None,
        seeds: int | Sequence[int] = (0,), test: Any = None, test_fraction: float = 0.25,
        split_seed: int = 100, categorical: Sequence[str] | None = None,
        **params: Any) -> FitSummary:
    """Train ``method`` (a name of :func:`methods`) on the input its task takes; one run per
    seed x parameter combination (a list value of a parameter is swept), trained as one
    batched program per value of the method's shared parameters, as a workflow job is.

    Data methods (task ``fair_classification`` or ``dro_classification``): ``X`` is a feature
    matrix (n, d), or a DataFrame whose columns ``y`` (the label) and ``s`` (the sensitive
    attribute) are named by those arguments; the other columns are encoded as the built-in
    tabular loaders encode theirs (non-numeric columns and ``categorical`` one-hot, the rest
    z-scored). Labels and groups are numbered in sorted order of their values; ``s`` may be
    left out for methods that do not train on it (fairness metrics are then NaN). ``test``:
    held-out data (a DataFrame like ``X``, or a tuple ``(X, y[, s])``); without it
    ``test_fraction`` of the rows are held out (seed ``split_seed``).

    Problem methods (task ``synthetic_optimization`` or ``bilevel_optimization``): ``X`` is the
    name of a problem of :mod:`dpminimax.problems` (None: the method's default), whose runs draw
    their own sample; ``y``, ``s``, ``test`` and ``categorical`` do not apply.

    Input of the other kind is refused in one line naming the call that works.
    ``epsilon``/``delta``: the privacy target of a private method (leave them out, or epsilon
    inf, for a non-private one); epsilon as a number or its label (``"0.5"``, ``"inf"``).
    ``params`` override the method's defaults; an unknown name is an error.
    """
    load_plugins()
    method_obj = get_method(method)
    problem = None
    if method_obj.task.draws_data:
        problem = _problem_name(method_obj, X, y, s, test, categorical, params)
    else:
        _require_data(method_obj, X)
        if s is None and needs_sensitive(method):
            raise ValueError(f"method {method!r} trains on a sensitive attribute: pass s")
        if "model" in method_obj.parameters:  # fit's features are tabular (kind "tabular")
            params.setdefault("model", TABULAR_MODEL)
    epsilon, delta = _privacy_target(method_obj, epsilon, delta)
    seeds = [seeds] if isinstance(seeds, int | np.integer) else list(seeds)
    if not seeds:
        raise ValueError("seeds: give at least one seed")
    runs = expand_runs(seeds, epsilon, delta, params)
    for run in runs:  # an unknown parameter fails here, before any encoding
        method_obj.resolve(run.params)
    data, encoder, levels = (None, None, None) if problem is not None else _prepare(
        X, y, s, test, test_fraction, split_seed, categorical)
    name = problem if data is None else data.name
    device = training.start_job(method_obj, name)
    fits = training.fit_by_shared(method_obj, data, runs, device)
    config = {"dataset": name, "method": method_obj.name}
    table = pd.concat([training.run_table(config, method_obj, result, data, device,
                                           [{} for _ in result.runs]) for result in fits],
                      ignore_index=True)
    if s is None:
        table.loc[:, [c for c in FAIRNESS_COLUMNS if c in table.columns]] = math.nan
    accounting = [
        RunAccounting(run_id=run.run_id, epsilon=float(record["epsilon"]),
                      delta=float(record["delta"]), accountant=record["accountant"],
                      neighboring_relation=record["neighboring_relation"],
                      event=None if record["event"] is None else event_from_dict(record["event"]),
                      record={"run_id": run.run_id, **record})
        for result in fits for run, record in zip(result.runs, result.accounting, strict=True)
    ]
    model = None if data is None else FittedModel(fits[0], tuple(levels), encoder)
    return FitSummary(method=method_obj.name, model=model, metrics=table,
                      accounting=accounting, data=data, problem=problem, fits=tuple(fits))


def _problem_name(method, X, y, s, test, categorical, params) -> str:
    """The problem a problem method's :func:`fit` solves (``X``, written into ``params``, or
    the method's default), refusing data in one line that names the call that works."""
    default = method.parameters.get("problem")
    route = (f"pass a problem name, e.g. dpminimax.fit({method.name!r}, {default!r}, "
             + ("epsilon=..., delta=...)" if method.private else "...)"))
    if X is not None and not isinstance(X, str):
        raise TypeError(f"method {method.name!r} (task {method.task.name!r}) draws its own "
                        f"sample from a problem, not from a {type(X).__name__}: {route}")
    extra = [name for name, value in (("y", y), ("s", s), ("test", test),
                                      ("categorical", categorical)) if value is not None]
    if extra:
        raise TypeError(f"method {method.name!r} (task {method.task.name!r}) takes no "
                        f"{'/'.join(extra)}: {route}")
    if X is not None:
        if "problem" in params and params["problem"] != X:
            raise ValueError(f"problem given twice: {X!r} and problem={params['problem']!r}")
        params["problem"] = X
    return params.get("problem", default)


def _require_data(method, X) -> None:
    """Refuse a data method's :func:`fit` without data, in one line naming the call."""
    if X is None or isinstance(X, str):
        got = "no data" if X is None else f"the name {X!r}"
        raise TypeError(f"method {method.name!r} (task {method.task.name!r}) trains on data, "
                        f"got {got}: pass a DataFrame, e.g. dpminimax.fit({method.name!r}, "
                        "frame, y='label'"
                        + (", s='group'" if needs_sensitive(method.name) else "")
                        + (", epsilon=..., delta=...)" if method.private else ")")
                        + ", or arrays X, y")


def prepared_from_arrays(
    x_train: Any, y_train: Any, s_train: Any, x_test: Any, y_test: Any, s_test: Any, *,
    name: str = "arrays", label_names: Sequence[str] | None = None,
    group_names: Sequence[str] | None = None, feature_names: Sequence[str] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> PreparedDataset:
    """A tabular :class:`PreparedDataset` held in memory: encoded features, class ids
    ``0..K-1`` and group ids ``0..G-1`` (names default to the ids present)."""
    x = {p: np.ascontiguousarray(v, dtype=np.float32) for p, v in (("train", x_train),
                                                                     ("test", x_test))}
    y = {p: np.asarray(v, dtype=np.int64) for p, v in (("train", y_train), ("test", y_test))}
    grp = {p: np.asarray(v, dtype=np.int64) for p, v in (("train", s_train), ("test", s_test))}
    for part in ("train", "test"):
        if x[part].ndim != 2 or not len(x[part]) == len(y[part]) == len(grp[part]):
            raise ValueError(f"{part}: features must be (n, d) with one label and one group per "
                             f"row; got shapes {x[part].shape}, {y[part].shape}, "
                             f"{grp[part].shape}")
    if x["train"].shape[1] != x["test"].shape[1]:
        raise ValueError(f"train and test have {x['train'].shape[1]} and "
                         f"{x['test'].shape[1]} features")
    classes = int(max(y["train"].max(), y["test"].max())) + 1
    groups = int(max(grp["train"].max(), grp["test"].max())) + 1
    label_names = [str(k) for k in range(classes)] if label_names is None else list(label_names)
    group_names = [str(g) for g in range(groups)] if group_names is None else list(group_names)
    feature_names = ([f"x{j}" for j in range(x["train"].shape[1])] if feature_names is None
                     else list(feature_names))
    summary = {"n_train": len(y["train"]), "n_test": len(y["test"]),
               "n_features": len(feature_names), "n_classes": len(label_names),
               "n_groups": len(group_names), "source": "in-memory arrays (dpminimax.fit)"}
    return PreparedDataset(
        name=name, kind="tabular", x_train=x["train"], y_train=y["train"],
        s_train=grp["train"], x_test=x["test"], y_test=y["test"], s_test=grp["test"],
        feature_names=feature_names, label_names=label_names, group_names=group_names,
        meta={**summary, **(meta or {})},
    )


def _privacy_target(method, epsilon: Any, delta: float | None) -> tuple[float, float]:
    """``fit``'s (epsilon, delta) as floats; ``epsilon`` is anything :meth:`Epsilon.parse`
    reads (``1``, ``"0.5"``, ``"inf"``)."""
    eps = None if epsilon is None else Epsilon.parse(epsilon, "epsilon")
    if not method.private:
        if eps is not None and eps.is_private:
            raise ValueError(f"method {method.name!r} is not private: leave epsilon out "
                             f"(or pass inf), got {epsilon}")
        return math.inf, NON_PRIVATE_DELTA if delta is None else float(delta)
    if eps is None or delta is None:
        raise ValueError(f"method {method.name!r} is private: give epsilon and delta")
    if not eps.is_private:
        raise ValueError(f"epsilon must be positive and finite, got {epsilon}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return float(eps), float(delta)


def _prepare(X, y, s, test, test_fraction, split_seed, categorical):
    """``(PreparedDataset, FrameEncoder or None, label levels)`` of the inputs of :func:`fit`."""
    frame = isinstance(X, pd.DataFrame)
    if frame:
        for role, key in (("y", y), ("s", s)):
            if key is not None and not (isinstance(key, str) and key in X.columns):
                got = repr(key) if isinstance(key, str) else type(key).__name__
                raise ValueError(f"{role}: with DataFrame input, name a column of it "
                                 f"(got {got}; columns {list(X.columns)})")
        y_all, s_all = _column(X, y), (None if s is None else _column(X, s))
        features = X.drop(columns=[c for c in (y, s) if c is not None])
        if X.isna().any().any():
            raise ValueError("the DataFrame has missing values: drop or fill them first "
                             f"(columns {list(X.columns[X.isna().any()])})")
    else:
        if categorical is not None:
            raise ValueError("categorical= applies to DataFrame input only")
        features, y_all, s_all = np.asarray(X), np.asarray(y), None if s is None else np.asarray(s)
        if features.ndim != 2 or len(y_all) != len(features) or (
                s_all is not None and len(s_all) != len(features)):
            raise ValueError(f"X must be (n, d) with one label (and one group) per row; got "
                             f"shapes {features.shape}, {y_all.shape}"
                             + ("" if s_all is None else f", {s_all.shape}"))
    n = len(y_all)
    if test is None:
        train, held = train_test_indices(n, seed=split_seed, test_fraction=test_fraction)
        split = {"scheme": "shuffled", "seed": split_seed, "test_fraction": test_fraction}
    else:
        features, y_all, s_all, n_test = _append_test(frame, features, y_all, s_all, test, y, s)
        train, held = np.arange(n), np.arange(n, n + n_test)
        split = {"scheme": "given"}
    if frame:
        encoder, x = FrameEncoder.fit(features.reset_index(drop=True), train, categorical)
        names = list(encoder.feature_names)
    else:
        encoder, x, names = None, features, None
    y_ids, label_levels = _codes(y_all)
    s_ids, group_levels = (np.zeros(len(y_ids), np.int64), ["all"]) if s_all is None \
        else _codes(s_all)
    data = prepared_from_arrays(
        x[train], y_ids[train], s_ids[train], x[held], y_ids[held], s_ids[held],
        name="dataframe" if frame else "arrays", label_names=[str(v) for v in label_levels],
        group_names=[str(v) for v in group_levels], feature_names=names,
        meta={"split": split, "sensitive_attribute": s if frame else None})
    return data, encoder, label_levels


def _append_test(frame, features, y_all, s_all, test, y, s):
    """The training inputs with the held-out ``test`` rows appended, and their count."""
    if frame:
        if not isinstance(test, pd.DataFrame):
            raise TypeError("test: with DataFrame input, pass a DataFrame with the same columns")
        t_y, t_s = _column(test, y), (None if s is None else _column(test, s))
        t_x = test[list(features.columns)]
        joined = pd.concat([features, t_x], ignore_index=True)
    else:
        if not isinstance(test, tuple) or len(test) not in (2, 3):
            raise TypeError("test: pass a tuple (X_test, y_test) or (X_test, y_test, s_test)")
        t_x, t_y = np.asarray(test[0]), np.asarray(test[1])
        t_s = np.asarray(test[2]) if len(test) == 3 else None
        joined = np.concatenate([features, t_x])
    if (s_all is None) != (t_s is None):
        raise ValueError("give the sensitive attribute for both training and test data, or "
                         "for neither")
    s_joined = None if s_all is None else np.concatenate([np.asarray(s_all), np.asarray(t_s)])
    return joined, np.concatenate([np.asarray(y_all), np.asarray(t_y)]), s_joined, len(t_y)


def _column(frame: pd.DataFrame, key: str) -> np.ndarray:
    if key not in frame.columns:
        raise KeyError(f"column {key!r} is not in the DataFrame")
    return frame[key].to_numpy()


def _codes(values: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """Ids in sorted order of the values, and the values (as Python scalars)."""
    levels, ids = np.unique(np.asarray(values), return_inverse=True)
    return ids.astype(np.int64).reshape(-1), [training.plain(v) for v in levels]


def _is_numeric(column: pd.Series) -> bool:
    return (pd.api.types.is_numeric_dtype(column)
            and not pd.api.types.is_bool_dtype(column))


__all__ = ["FitSummary", "FittedModel", "FrameEncoder", "RunAccounting", "fit", "methods",
           "needs_sensitive", "prepared_from_arrays"]
