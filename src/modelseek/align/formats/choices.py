"""The named choices of the Re-Align formats: embedding strategy, modality, team, submission form."""

from __future__ import annotations


from ...core.enums import Choice
from ...core.errors import InputError

class Strategy(Choice):
    """How a layer's output becomes one vector per stimulus."""

    POOL = "pool"        # global average pool over spatial positions ([n,c,h,w] -> [n,c]); tokens: mean
    CLS = "cls"          # first token of a [n,tokens,d] sequence
    FLATTEN = "flatten"  # everything after the batch axis
    MEAN = "mean"        # mean over tokens (masked by the attention mask for text)


class Modality(Choice):
    IMAGE = "image"
    TEXT = "text"


class Team(Choice):
    BLUE = "blue"
    RED = "red"


class SubmissionForm(Choice):
    """``live``: the files the running challenge takes (models as {model_name, layer_name}, stimuli under
    ``images``); ``draft``: the draft evaluation contract (``team`` + model names / ``stimuli``)."""

    LIVE = "live"
    DRAFT = "draft"


def _enum(cls, value, *, path, line, fld):
    """The one :class:`~modelseek.core.enums.Choice` parser, with the file and line of the record."""
    try:
        return cls.parse(value, field=fld)
    except InputError as exc:
        raise InputError(exc.message, path=path, line=line, field=fld) from None
