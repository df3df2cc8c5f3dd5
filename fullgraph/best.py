"""The model selection every full-graph method reports: the earliest round with the best validation score."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class Best:
    """The best validation score so far, the round (or epoch) it came in and that round's test score.

    Ties keep the earlier round, and a score that is not a number (ROC-AUC of a split with one
    class) never improves on one that is.
    """

    index: int = -1
    val: float = -math.inf
    test: float = math.nan

    def update(self, index: int, val: float, test: float = math.nan) -> bool:
        """Take round ``index``'s scores in; True when it is the new best."""
        if not val > self.val:
            return False
        self.index, self.val, self.test = index, val, test
        return True
