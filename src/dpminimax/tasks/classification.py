"""Classification with a sensitive attribute: accuracy and fairness gaps on the test and the
training set, the training loss, and the method's own metrics (constraint satisfaction); and
the same accuracy and fairness gaps of the trivial baseline (``trivial_<metric>``, issue 36):
the constant predictor of the training labels' majority class, whose fairness gaps are 0; and
whether each run is better than it at all (issue 38 item 4)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from dpminimax.data.inputs import split_inputs
from dpminimax.metrics import classification_report, majority_gain_lower_bound
from dpminimax.tasks.base import Task
from dpminimax.trivial import BELOW_MAJORITY, MAJORITY_GAIN_LOW, OUTPUT, prefixed

if TYPE_CHECKING:
    from dpminimax.data import PreparedDataset
    from dpminimax.fit_result import FitResult

log = logging.getLogger("dpminimax")


class FairClassification(Task):
    """The task of the RaCO-DP and DP-FERMI papers and their baselines (tabular or image data
    with labels and a sensitive attribute)."""

    name: ClassVar[str] = "fair_classification"
    attacked: ClassVar[bool] = True
    draws_data: ClassVar[bool] = False

    def evaluate(self, fit: FitResult, data: PreparedDataset,
                 device: torch.device) -> list[dict[str, Any]]:
        """Test metrics (``test_accuracy``, ``test_dp_violation``...), the same on the training
        set (``train_...``), ``train_loss``, ``degenerate_predictor`` (one class predicted for
        every test row: its fairness gaps are 0 trivially), ``majority_gain_low`` and
        ``below_majority`` (:func:`below_majority`) and the fitting method's ``extra_metrics``."""
        x_train = split_inputs(data, "train", device)
        predictions = fit.model.predict(fit.state, split_inputs(data, "test", device)).cpu().numpy()
        train_predictions = fit.model.predict(fit.state, x_train).cpu().numpy()
        train_losses = fit.model.losses(
            fit.state, x_train, torch.as_tensor(data.y_train, device=device),
        ).mean(dim=1).cpu().numpy()
        extra = fit.method.extra_metrics(fit, data, device)
        name = fit.method.name
        majority = majority_class(data)
        trivial = majority_report(data, majority)
        rows = []
        for r, run in enumerate(fit.runs):
            degenerate = bool(np.unique(predictions[r]).size == 1)
            if degenerate:
                log.warning("%s run %s predicts one class for every test example (a constant "
                            "predictor): its accuracy is the majority rate, its fairness gaps 0",
                            name, run.run_id)
            rows.append({
                **classification_report(data.y_test, predictions[r], data.s_test),
                **_train_metrics(classification_report(data.y_train, train_predictions[r],
                                                       data.s_train)),
                **extra[r],
                "train_loss": float(train_losses[r]),
                "degenerate_predictor": degenerate,
                **below_majority(name, run.run_id, data.y_test, predictions[r], majority),
                **trivial,
            })
        return rows


def majority_class(data: PreparedDataset) -> int:
    """The most frequent training label (ties: the smaller label): the trivial predictor's."""
    labels, counts = np.unique(np.asarray(data.y_train), return_counts=True)
    return int(labels[np.argmax(counts)])


def below_majority(method: str, run_id: Any, y_test: np.ndarray, predictions: np.ndarray,
                   majority: int, alpha: float = 0.05) -> dict[str, Any]:
    """``majority_gain_low``, the one-sided ``1 - alpha`` lower bound on the run's test accuracy
    minus the ``majority`` predictor's (exact McNemar on the test rows, paired since both predict
    the same rows: :func:`.majority_gain_lower_bound`), and ``below_majority``: that bound is
    <= 0, the run is not shown better than the trivial baseline. A flagged run is logged."""
    low = majority_gain_lower_bound(y_test, predictions, majority, alpha)
    if low <= 0:
        log.warning("%s run %s is not better than the majority class: test accuracy %.4f, "
                    "majority class %.4f, %.0f%% lower bound on the difference %+.4f (exact "
                    "McNemar, %d test rows)", method, run_id, np.mean(predictions == y_test),
                    np.mean(y_test == majority), 100 * (1 - alpha), low, len(y_test))
    return {MAJORITY_GAIN_LOW: low, BELOW_MAJORITY: bool(low <= 0)}


def majority_report(data: PreparedDataset, majority: int) -> dict[str, Any]:
    """The test and training metrics of the constant predictor of ``majority``
    (:func:`majority_class`), as trivial columns."""
    test = classification_report(data.y_test, np.full(len(data.y_test), majority), data.s_test)
    train = classification_report(data.y_train, np.full(len(data.y_train), majority),
                                  data.s_train)
    return prefixed(test | _train_metrics(train)) | {OUTPUT: f"majority class ({majority})"}


def _train_metrics(report: Mapping[str, float]) -> dict[str, float]:
    """The same metrics on the training set: ``train_accuracy``, ``train_dp_violation`` ..."""
    return {"train_" + key.removeprefix("test_"): value for key, value in report.items()}
