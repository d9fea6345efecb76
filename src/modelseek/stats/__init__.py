"""Statistics with explicit seeds: bootstrap intervals and paired comparisons."""

from .bootstrap import bootstrap_ci, paired_bootstrap

__all__ = ["bootstrap_ci", "paired_bootstrap"]
