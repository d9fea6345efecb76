"""Statistics with explicit seeds: bootstrap intervals, significance tests for duels, FDR correction.

One file per test: ``ttest`` (paired t-test), ``auroc`` (Bayesian AUROC test), ``bootstrap`` (intervals and
the paired bootstrap test for means such as ROUGE and for word perplexity), ``multitest``
(Benjamini-Hochberg). Randomness comes only from ``np.random.Generator`` objects or explicit seeds
(``seeding.derive_rng`` gives named streams).
"""

from .auroc import auroc, auroc_draws, auroc_pvalue, auroc_pvalue_matrix, bayesian_auroc_test
from .bootstrap import (bootstrap_ci, bootstrap_pvalue_matrix, paired_bootstrap, paired_bootstrap_perplexity_test,
                        paired_bootstrap_test, perplexity, resample_counts, resampled_mean, resampled_perplexity)
from .multitest import benjamini_hochberg
from .seeding import derive_rng


def __getattr__(name: str):
    # the t-test pulls in scipy.special (~0.13 s), which `import modelseek` should not pay for
    if name in ("paired_ttest", "paired_ttest_matrix"):
        from . import ttest  # lazy: scipy

        return getattr(ttest, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["auroc", "auroc_draws", "auroc_pvalue", "auroc_pvalue_matrix", "bayesian_auroc_test", "benjamini_hochberg",
           "bootstrap_ci", "bootstrap_pvalue_matrix", "derive_rng", "paired_bootstrap",
           "paired_bootstrap_perplexity_test", "paired_bootstrap_test", "paired_ttest", "paired_ttest_matrix",
           "perplexity", "resample_counts", "resampled_mean", "resampled_perplexity"]
