"""EEVEE: choose the few benchmarks whose metrics predict all the others (GATE's Efficient Evaluation
process Evolution Engine). A models x benchmarks table in; benchmark subsets, scores, importance and
budget tiers out::

    from modelseek.eevee import load_table, search
    table = load_table("03032024-full.csv")          # task_mapping.yaml / task_weights.yaml beside it
    result = search(table, k=8, nested=NestedConfig())  # SearchConfig(generations=10, seed=0) by default
    print(result.best.subset, result.honest.loss, result.best.mean)   # honest (nested) and in-sample loss

torch is imported only when meta-models are trained.
"""

from .config import MetaConfig
from .evaluators import BatchedEvaluator, Evaluator, LoopEvaluator
from .models import META_MODELS, MetaModel
from .score import Score
from .honest import Honest, NestedConfig
from .search import SearchConfig, SearchResult, Tier, choose_k, importance, parse_ks, search, sweep, tiers
from .table import Table, load_table, read_costs, read_task_mapping, read_task_weights
from .report import search_report

__all__ = ["META_MODELS", "BatchedEvaluator", "Evaluator", "Honest", "LoopEvaluator", "MetaConfig", "MetaModel",
           "NestedConfig", "Score", "SearchConfig", "SearchResult", "Table", "Tier", "choose_k", "importance",
           "load_table", "parse_ks", "read_costs", "read_task_mapping", "read_task_weights",
           "search", "search_report", "sweep", "tiers"]


def __getattr__(name: str):
    if name == "search_report":  # report imports search: loaded on first use

        return search_report
    raise AttributeError(name)
