"""EEVEE: choose the few benchmarks whose metrics predict all the others (GATE's Efficient Evaluation
process Evolution Engine). A models x benchmarks table in; benchmark subsets, scores, importance and
budget tiers out::

    from modelseek.eevee import load_table, search
    table = load_table("03032024-full.csv")          # task_mapping.yaml / task_weights.yaml beside it
    result = search(table, k=8)                      # SearchConfig(generations=10, seed=0) by default
    print(result.best.subset, result.best.mean)

torch is imported only when meta-models are trained.
"""

from .config import MetaConfig
from .evaluators import BatchedEvaluator, Evaluator, LoopEvaluator
from .models import META_MODELS, MetaModel, register_meta_model
from .score import Score
from .search import SearchConfig, SearchResult, Tier, importance, parse_ks, search, sweep, tiers
from .table import Table, load_table, read_costs, read_task_mapping, read_task_weights

__all__ = ["META_MODELS", "BatchedEvaluator", "Evaluator", "LoopEvaluator", "MetaConfig", "MetaModel", "Score",
           "SearchConfig", "SearchResult", "Table", "Tier", "importance", "load_table", "parse_ks", "read_costs",
           "read_task_mapping", "read_task_weights", "register_meta_model", "search", "sweep", "tiers"]
