"""Mocks for fine-tuning: tiny random encoders that load like real candidates, a trainer that kills its
worker once (to test executors against worker deaths), and a fake trainer that trains nothing (to test job
stores and grids with many jobs and several workers)."""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..retrieval.data.synthetic import CLASS_WORDS, DOMAINS, FILLER
from ..retrieval.finetune.protocol import FinetuneResult, _quiet_transformers, finetune


def make_learnable_bert(path: str | Path, seed: int = 0, hidden: int = 32, layers: int = 2,
                        dropout: float = 0.1) -> Path:
    """Save a randomly initialised tiny BERT with a classification-ready config and a word-level vocabulary
    covering the words of :func:`modelseek.testing.make_text_task`, with ``save_pretrained``; returns ``path``.

    Unlike :func:`modelseek.testing.tiny_models.make_tiny_bert` (30k WordPiece vocabulary, for feature
    extraction), this one *learns* the generated keyword tasks in a few epochs at lr ~5e-3, so fine-tuning
    tests see real early stopping and F1 that differs between models. ``dropout=0`` makes training
    independent of dropout masks (used to compare gradient accumulation with one big batch).
    """
    import torch  # lazy: torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast  # type: ignore[attr-defined]  # a lazy alias in transformers 5, the class in 4.x  # lazy: transformers

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    words = sorted({w for ws in DOMAINS.values() for w in ws} | {w for ws in CLASS_WORDS for w in ws} | set(FILLER))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *words]
    tok = BertTokenizerFast({w: i for i, w in enumerate(vocab)}, do_lower_case=True, model_max_length=64)
    config = BertConfig(vocab_size=len(vocab), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=2, intermediate_size=2 * hidden, max_position_embeddings=64,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertForMaskedLM(config)
    with _quiet_transformers():
        model.save_pretrained(path)
        tok.save_pretrained(path)
    return path


@dataclass(frozen=True)
class CrashOnce:
    """A trainer that runs :func:`modelseek.retrieval.finetune.finetune` but kills its own process (``os._exit``)
    the first time it is asked to run ``model_id`` on ``task_id``; ``marker`` records that it did."""

    marker: str
    task_id: str
    model_id: str

    def __call__(self, task, model, recipe, seed, progress=False):
        if task.task_id == self.task_id and model.model_id == self.model_id and not os.path.exists(self.marker):
            Path(self.marker).write_text(str(os.getpid()), encoding="utf-8")
            os._exit(17)
        return finetune(task, model, recipe, seed, progress)


@dataclass(frozen=True)
class FakeTrainer:
    """A trainer that trains nothing: after ``delay`` seconds it returns a result whose F1 is a fixed function
    of (task, model, seed), so any grid run with it has one known ground truth. With ``log``, each call
    appends ``task model seed pid`` to that file (one ``O_APPEND`` write: lines from several processes do
    not interleave), the trainer's own record of how often each job ran."""

    delay: float = 0.0
    log: str | None = None

    @staticmethod
    def f1(task_id: str, model_id: str, seed: int) -> float:
        digest = hashlib.sha256(f"{task_id}\0{model_id}\0{seed}".encode()).digest()
        return 0.05 + 0.9 * int.from_bytes(digest[:4], "big") / 2 ** 32

    def __call__(self, task, model, recipe, seed, progress=False):
        if self.delay:
            time.sleep(self.delay)
        if self.log:
            fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, f"{task.task_id} {model.model_id} {seed} {os.getpid()}\n".encode())
            finally:
                os.close(fd)
        f1 = self.f1(task.task_id, model.model_id, int(seed))
        return FinetuneResult(f1=f1, accuracy=f1, val_f1=f1, val_accuracy=f1, best_val_loss=1.0 - f1,
                              test_loss=1.0 - f1, epochs=1, best_epoch=1, stopped_early=False, wall_s=self.delay,
                              train_examples_per_s=0.0, seed=int(seed), device="cpu", precision="fp32",
                              n_train=len(task.train.texts), n_val=len(task.val.texts),
                              n_test=len(task.test.texts) if task.test is not None else 0,
                              num_labels=len(set(task.train.labels)))
