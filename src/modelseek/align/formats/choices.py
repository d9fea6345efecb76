"""The named choices of the Re-Align formats: team, submission form (a model entry's embedding strategy and modality
are :mod:`modelseek.retrieval.vision.choices`, re-exported here)."""

from __future__ import annotations


from ...core.enums import Choice
from ...core.errors import InputError
from ...retrieval.vision.choices import Modality, Strategy

__all__ = ["Modality", "Strategy", "SubmissionForm", "Team", "_enum"]


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
