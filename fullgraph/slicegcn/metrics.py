"""The paper's figures of merit: ROC-AUC for two classes, accuracy otherwise."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


def roc_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve: the chance a random positive outscores a random negative (ties
    count half), from average ranks (the Mann-Whitney statistic); NaN with one class only."""
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores), dtype=np.float64)
    sorted_scores = scores[order]
    # Average rank (1-based) of each run of equal scores.
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    ends = np.r_[starts[1:], len(scores)]
    average = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(average, ends - starts)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def score(logits: Tensor, labels: Tensor, classes: int) -> float:
    if classes == 2:
        probability = torch.softmax(logits.detach(), dim=1)[:, 1].numpy().astype(np.float64)
        return roc_auc(probability, labels.numpy() == 1)
    return float((logits.argmax(dim=1) == labels).float().mean()) if len(labels) else float("nan")
