"""The named choices of a model entry: how a layer's output becomes one vector, and what the model reads."""

from __future__ import annotations

from ...core.enums import Choice


class Strategy(Choice):
    """How a layer's output becomes one vector per stimulus."""

    POOL = "pool"        # global average pool over spatial positions ([n,c,h,w] -> [n,c]); tokens: mean
    CLS = "cls"          # first token of a [n,tokens,d] sequence
    FLATTEN = "flatten"  # everything after the batch axis
    MEAN = "mean"        # mean over tokens (masked by the attention mask for text)


class Modality(Choice):
    IMAGE = "image"
    TEXT = "text"
