"""Duel leaderboards (BenCzechMark-style): every pair of models is compared on every task by a one-tailed
significance test; a model's task win score is the share of duels it wins.

* :mod:`.config` — task -> category -> metric (default: BenCzechMark's ``metadata.json``, shipped).
* :mod:`.submission` — the compiled-submission format and its validator; :mod:`.compile` builds one from
  lm-evaluation-harness output folders (max-pooled over prompts).
* :mod:`.engine`, :mod:`.scoring`, :mod:`.tournament` — profiles, vectorised duels, win scores.
* :mod:`.storage` — SQLAlchemy store with pre-submission and immutable publication (extra ``web``).
* :mod:`.app` — the Gradio web app (extra ``web``); :mod:`.runs` — the same leaderboard over TREC runs.
"""

from .config import LeaderboardConfig, Metric, TaskSpec
from .engine import Settings
from .submission import Submission, load_submission, validate_submission
from .tournament import TournamentResult, tournament

__all__ = ["LeaderboardConfig", "Metric", "Settings", "Submission", "TaskSpec", "TournamentResult", "load_submission",
           "tournament", "validate_submission"]
