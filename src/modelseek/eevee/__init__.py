"""EEVEE: choose the few benchmarks whose metrics predict all the others (GATE's Efficient Evaluation
process Evolution Engine). A models x benchmarks table in; benchmark subsets, scores, importance and
budget tiers out::

    from modelseek.eevee import load_table, search
    table = load_table("03032024-full.csv")          # task_mapping.yaml / task_weights.yaml beside it
    result = search(table, k=8)                      # SearchConfig(generations=10, seed=0) by default
    print(result.best.subset, result.best.mean)

torch is imported only when meta-models are trained.
"""

from .meta import BatchedEvaluator, LoopEvaluator, MetaConfig, Score
from .search import SearchConfig, SearchResult, Tier, importance, parse_ks, search, sweep, tiers
from .table import Table, load_table, read_costs, read_task_mapping, read_task_weights

__all__ = ["BatchedEvaluator", "LoopEvaluator", "MetaConfig", "Score", "SearchConfig", "SearchResult", "Table",
           "Tier", "importance", "load_table", "parse_ks", "read_costs", "read_task_mapping",
           "read_task_weights", "search", "sweep", "tiers"]
