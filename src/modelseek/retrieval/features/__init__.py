"""Frozen-feature extraction (text: :mod:`modelseek.retrieval.features.text`) with a verified on-disk cache.

Importing this package does not import torch or transformers; they load on the first extraction.
"""

from .cache import FeatureCache, default_cache_dir
from .text import TextEncoder, extract_features, offline_minilm_path

__all__ = ["FeatureCache", "TextEncoder", "default_cache_dir", "extract_features", "offline_minilm_path"]
