"""Early stopping on the validation loss, separate from training so that it is testable on a given
sequence of losses."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class EarlyStopper:
    """Stop when the monitored loss has not improved for ``patience`` epochs.

    An epoch *improves* when its loss is lower than the best so far by more than ``min_delta``; the first
    finite loss always improves. ``step`` returns True when training should stop. ``best_epoch`` is
    1-based (the epoch whose weights the protocol restores) and 0 before any improvement.

    >>> s = EarlyStopper(patience=2)
    >>> [s.step(x) for x in [1.0, 0.8, 0.9, 0.85]]
    [False, False, False, True]
    >>> s.best_epoch, s.best_loss
    (2, 0.8)
    """

    patience: int = 10
    min_delta: float = 0.0
    best_loss: float = math.inf
    best_epoch: int = 0
    epoch: int = 0
    history: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.patience < 1:
            raise ValueError("patience must be >= 1")
        if self.min_delta < 0:
            raise ValueError("min_delta must be >= 0")

    @property
    def improved(self) -> bool:
        """Whether the last epoch given to :meth:`step` was a new best."""
        return self.epoch > 0 and self.best_epoch == self.epoch

    @property
    def bad_epochs(self) -> int:
        """Epochs since the best one."""
        return self.epoch - self.best_epoch

    def step(self, loss: float) -> bool:
        self.epoch += 1
        loss = float(loss)
        self.history.append(loss)
        if math.isfinite(loss) and loss < self.best_loss - self.min_delta:
            self.best_loss = loss
            self.best_epoch = self.epoch
        return self.bad_epochs >= self.patience
