"""The membership attack of paper 004's Table 2, run twice (our protocol; the paper does not
describe its attack).

Score: the model's confidence in the true label (a black-box threshold attack, Yeom et al.
2018 / Salem et al. 2019; AUC by sweeping the threshold). Members: ``size`` random training
rows. Non-members, two ways: (a) ``uniform``, random test rows, as the paper likely drew them:
on an imbalanced training set against a balanced test set the attack can read the CLASS, which
is not membership; (b) ``stratified``, test rows drawn to the members' class histogram, the
exchangeable game in which (epsilon, delta)-DP caps the AUC (:func:`~dpminimax.attacks.
dp_ceiling.dp_auc_ceiling`). Beside both, the uniform game's second ceiling: the best AUC of
any attack that reads only the class (:func:`class_only_auc_cap`), 0.5 + TV / 2 for two classes.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, softmax

from dpminimax.metrics.classification import roc_auc


def true_label_confidence(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    """p(y_i | x_i) from logits (n, K) (K = 1: one binary logit)."""
    if logits.shape[1] == 1:
        p1 = expit(logits[:, 0])
        return np.where(y == 1, p1, 1.0 - p1)
    return softmax(logits, axis=1)[np.arange(len(y)), y]


def class_only_auc_cap(member_classes: np.ndarray, nonmember_classes: np.ndarray) -> float:
    """The largest AUC of an attack whose score is a function of the class only: by
    Neyman-Pearson, the score that orders classes by their likelihood ratio (members' class
    frequency over the non-members'), evaluated on these very draws. With two classes it is
    0.5 + TV / 2, TV the total-variation distance of the two class histograms."""
    member_classes, nonmember_classes = np.asarray(member_classes), np.asarray(nonmember_classes)
    classes = np.union1d(member_classes, nonmember_classes)
    inside = np.array([(member_classes == c).mean() for c in classes])
    outside = np.array([(nonmember_classes == c).mean() for c in classes])
    # inside / (inside + outside) orders the classes like the ratio and stays finite
    share = inside / (inside + outside)
    scores = share[np.searchsorted(classes, np.r_[member_classes, nonmember_classes])]
    labels = np.r_[np.ones(len(member_classes)), np.zeros(len(nonmember_classes))]
    return roc_auc(scores, labels)


def draw_rows(y_train: np.ndarray, y_test: np.ndarray, size: int, rng: np.random.Generator
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(members, uniform non-members, stratified non-members)`` row indices: as many of each
    as can be drawn (the stratified set matches the members' class counts, each class capped
    by the test rows of that class, and the members are trimmed to the same counts)."""
    members = rng.choice(len(y_train), size=min(size, len(y_train)), replace=False)
    classes, counts = np.unique(y_train[members], return_counts=True)
    available = np.array([(y_test == c).sum() for c in classes])
    scale = min(1.0, float(np.min(available / counts)))
    keep = np.floor(counts * scale).astype(int)
    chosen_members, stratified = [], []
    for c, k in zip(classes, keep, strict=True):
        chosen_members.append(members[y_train[members] == c][:k])
        stratified.append(rng.choice(np.flatnonzero(y_test == c), size=k, replace=False))
    members = np.concatenate(chosen_members)
    uniform = rng.choice(len(y_test), size=len(members), replace=False)
    return members, uniform, np.concatenate(stratified)


def confounded_mia(train_logits: np.ndarray, test_logits: np.ndarray, y_train: np.ndarray,
                   y_test: np.ndarray, seeds, size: int = 5000) -> list[dict[str, float]]:
    """Per run: ``mia_auc_uniform`` and ``mia_auc_stratified`` of the confidence attack on the
    runs' logits (R, n, K) of every training and test row, the uniform game's class-only cap
    ``mia_auc_class_cap`` and the members drawn (run r's draws from
    ``default_rng([seed_r, 4004])``)."""
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    rows = []
    for r, seed in enumerate(seeds):
        rng = np.random.default_rng([int(seed), 4004])
        members, uniform, stratified = draw_rows(y_train, y_test, size, rng)
        inside = true_label_confidence(train_logits[r][members], y_train[members])
        out_u = true_label_confidence(test_logits[r][uniform], y_test[uniform])
        out_s = true_label_confidence(test_logits[r][stratified], y_test[stratified])
        labels = np.r_[np.ones(len(inside)), np.zeros(len(inside))]
        rows.append({"mia_auc_uniform": roc_auc(np.r_[inside, out_u], labels),
                     "mia_auc_stratified": roc_auc(np.r_[inside, out_s], labels),
                     "mia_auc_class_cap": class_only_auc_cap(y_train[members], y_test[uniform]),
                     "mia_members": int(len(inside))})
    return rows
