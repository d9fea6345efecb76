"""Stand-ins of the 20 NTCIR-19 Subtask A candidates as ``download_models`` writes them (``data/models/NN``): each with
its real config class and head (masked LM, sequence classification with its labels, question answering, a bare
encoder), its tokenizer kind (WordPiece, byte-level BPE, DeBERTa's GPT-2 BPE, SentencePiece Unigram as
``tokenizer.json``), its position table (512, or 514 for the RoBERTa family) and a model card ``README.md`` whose
header and first paragraph read as the real card's do (tags such as ``exbert``, the pre-training corpora in
``datasets``) — and tiny random weights from an explicit seed. Facts from ``model-facts.csv`` (see the shared data's
README); weights, vocabularies and card wording are the project's own.

:func:`make_candidate_snapshot` writes one; :func:`write_candidate_pool` writes the 20 (or some) and a pool YAML.
Needs the ``text`` extra.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..retrieval.features.loading import quiet_transformers
from .tiny_models import _seeded_init

_CORPUS = ["the cat sat on the mat", "dogs bark at night", "a stock rose sharply today", "shares fell after earnings",
           "the movie was wonderful", "terrible service never again", "hello world", "the patient was discharged",
           "great product fast delivery", "i love this song", "what a sad day", "the court ruled on the contract"] * 3


@dataclass(frozen=True)
class Kind:
    """One candidate: its NTCIR id and name, how it is built and what its card says."""

    model_id: int
    hf_id: str
    family: str  # bert | roberta | xlm-roberta | distilbert | albert | deberta
    head: str  # mlm | seq | qa | base
    labels: tuple[str, ...] = ()
    large: bool = False
    tokenizer_max: bool = True  # whether the tokenizer config sets model_max_length (some snapshots do not)
    card: str = ""
    meta: dict = field(default_factory=dict)


_GENERAL_BERT = ("Pretrained model on English language using a masked language modeling (MLM) objective. This model "
                 "is uncased: it does not make a difference between english and English.")
KINDS: dict[int, Kind] = {k.model_id: k for k in [
    Kind(1, "GroNLP/hateBERT", "bert", "mlm", tokenizer_max=False,
         meta={"language": "en", "tags": ["HateBERT", "text classification", "abusive language", "hate speech",
                                         "offensive language"]},
         card="HateBERT is an English pre-trained BERT model obtained by further training the English BERT base "
              "uncased model with more than 1 million posts from banned communites from Reddit."),
    Kind(2, "ProsusAI/finbert", "bert", "seq", ("positive", "negative", "neutral"), tokenizer_max=False,
         meta={"language": "en", "tags": ["financial-sentiment-analysis", "sentiment-analysis"]},
         card="FinBERT is a pre-trained NLP model to analyze sentiment of financial text. It is built by further "
              "training the BERT language model in the finance domain, using a large financial corpus and thereby "
              "fine-tuning it for financial sentiment classification. Financial PhraseBank by Malo et al. (2014) is "
              "used for fine-tuning."),
    Kind(3, "albert-base-v2", "albert", "mlm",
         meta={"language": "en", "license": "apache-2.0", "tags": ["exbert"], "datasets": ["bookcorpus", "wikipedia"]},
         card="Pretrained model on English language using a masked language modeling (MLM) objective. Like all ALBERT "
              "models, this model is uncased."),
    Kind(4, "bert-base-multilingual-uncased", "bert", "mlm",
         meta={"language": ["multilingual", "af", "sq", "ar"], "license": "apache-2.0", "datasets": ["wikipedia"]},
         card="Pretrained model on the top 102 languages with the largest Wikipedia using a masked language modeling "
              "(MLM) objective."),
    Kind(5, "bert-base-uncased", "bert", "mlm",
         meta={"language": "en", "tags": ["exbert"], "license": "apache-2.0", "datasets": ["bookcorpus", "wikipedia"]},
         card=_GENERAL_BERT),
    Kind(6, "bert-large-uncased", "bert", "mlm", large=True,
         meta={"language": "en", "license": "apache-2.0", "datasets": ["bookcorpus", "wikipedia"]},
         card=_GENERAL_BERT),
    Kind(7, "bert-large-uncased-whole-word-masking-finetuned-squad", "bert", "qa", large=True,
         meta={"language": "en", "license": "apache-2.0", "datasets": ["bookcorpus", "wikipedia"]},
         card="Pretrained model on English language using a masked language modeling (MLM) objective, trained with "
              "whole word masking. After pre-training, this model was fine-tuned on the SQuAD dataset."),
    Kind(8, "cardiffnlp/twitter-roberta-base-sentiment-latest", "roberta", "seq", ("negative", "neutral", "positive"),
         meta={"language": "en", "datasets": ["tweet_eval"]},
         card="This is a RoBERTa-base model trained on ~124M tweets from January 2018 to December 2021, and "
              "finetuned for sentiment analysis with the TweetEval benchmark."),
    Kind(9, "deepset/roberta-base-squad2", "roberta", "qa",
         meta={"language": "en", "license": "cc-by-4.0", "datasets": ["squad_v2"]},
         card="This is the roberta-base model, fine-tuned using the SQuAD2.0 dataset. It's been trained on "
              "question-answer pairs, including unanswerable questions, for the task of Question Answering."),
    Kind(10, "distilbert-base-uncased", "distilbert", "mlm",
         meta={"language": "en", "tags": ["exbert"], "license": "apache-2.0", "datasets": ["bookcorpus", "wikipedia"]},
         card="This model is a distilled version of the BERT base model. It is uncased."),
    Kind(11, "distilbert-base-uncased-distilled-squad", "distilbert", "qa",
         meta={"language": "en", "license": "apache-2.0", "datasets": ["squad"]},
         card="This model is a fine-tune checkpoint of DistilBERT-base-uncased, fine-tuned using (a second step of) "
              "knowledge distillation on SQuAD v1.1."),
    Kind(12, "distilbert-base-uncased-finetuned-sst-2-english", "distilbert", "seq", ("NEGATIVE", "POSITIVE"),
         meta={"language": "en", "license": "apache-2.0", "datasets": ["sst2", "glue"]},
         card="This model is a fine-tune checkpoint of DistilBERT-base-uncased, fine-tuned on SST-2."),
    Kind(13, "distilroberta-base", "roberta", "mlm",
         meta={"language": "en", "tags": ["exbert"], "license": "apache-2.0", "datasets": ["openwebtext"]},
         card="This model is a distilled version of the RoBERTa-base model. It follows the same training procedure "
              "as DistilBERT."),
    Kind(14, "emilyalsentzer/Bio_ClinicalBERT", "bert", "base", tokenizer_max=False,
         meta={"language": "en", "tags": ["fill-mask"], "license": "mit"},
         card="The Bio+Clinical BERT model was initialized from BioBERT & trained on all MIMIC notes, a database "
              "containing electronic health records from ICU patients."),
    Kind(15, "j-hartmann/emotion-english-distilroberta-base", "roberta", "seq",
         ("anger", "disgust", "fear", "joy", "neutral", "sadness", "surprise"),
         meta={"language": "en", "tags": ["distilroberta", "sentiment", "emotion", "twitter", "reddit"]},
         card="With this model, you can classify emotions in English text data. The model was trained on 6 diverse "
              "datasets and predicts Ekman's 6 basic emotions, plus a neutral class."),
    Kind(16, "microsoft/deberta-base", "deberta", "base",
         meta={"language": "en", "tags": "deberta-v1", "license": "mit"},
         card="DeBERTa improves the BERT and RoBERTa models using disentangled attention and enhanced mask decoder. "
              "It outperforms BERT and RoBERTa on majority of NLU tasks with 80GB training data."),
    Kind(17, "nlptown/bert-base-multilingual-uncased-sentiment", "bert", "seq",
         ("1 star", "2 stars", "3 stars", "4 stars", "5 stars"),
         meta={"language": ["en", "nl", "de", "fr", "it", "es"], "license": "mit"},
         card="This is a bert-base-multilingual-uncased model finetuned for sentiment analysis on product reviews in "
              "six languages."),
    Kind(18, "roberta-base", "roberta", "mlm",
         meta={"language": "en", "tags": ["exbert"], "license": "mit", "datasets": ["bookcorpus", "wikipedia"]},
         card="Pretrained model on English language using a masked language modeling (MLM) objective. This model "
              "is case-sensitive: it makes a difference between english and English."),
    Kind(19, "xlm-roberta-base", "xlm-roberta", "mlm",
         meta={"tags": ["exbert"], "language": ["multilingual", "af", "am", "ar"], "license": "mit"},
         card="XLM-RoBERTa model pre-trained on 2.5TB of filtered CommonCrawl data containing 100 languages."),
    Kind(20, "zhayunduo/roberta-base-stocktwits-finetuned", "roberta", "seq", ("Bearish", "Bullish"),
         tokenizer_max=False, meta={},
         card="This model is fine-tuned with roberta-base model on 3,200,000 comments from stocktwits, with the "
              "user-labeled tags 'Bullish' or 'Bearish'."),
]}

#: the candidates whose checkpoint carries a sequence-classification head
WITH_HEAD = tuple(k for k, v in KINDS.items() if v.head == "seq")


def _wordpiece_vocab(folder: Path) -> Path:
    """A small WordPiece vocabulary: the special tokens, the corpus's words, letters and their ``##`` forms."""
    words = sorted({w for s in _CORPUS for w in s.split()})
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)] + list(".,!?'-")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *letters, *("##" + c for c in letters)]
    path = folder / "vocab.txt"
    path.write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    return path


def _tokenizer(kind: Kind, folder: Path):
    """The tokenizer of ``kind``'s family, trained on a few sentences (or a small WordPiece vocabulary)."""
    from tokenizers import ByteLevelBPETokenizer, SentencePieceUnigramTokenizer  # lazy: tokenizers
    from tokenizers.processors import TemplateProcessing  # lazy: tokenizers

    mml: dict[str, Any] = {"model_max_length": 512} if kind.tokenizer_max else {}
    if kind.family in ("bert", "distilbert"):
        from transformers import BertTokenizerFast, DistilBertTokenizerFast  # type: ignore[attr-defined]  # lazy: transformers

        cls = DistilBertTokenizerFast if kind.family == "distilbert" else BertTokenizerFast
        vocab = _wordpiece_vocab(folder)
        # transformers 5 takes the vocabulary itself (``vocab``) and ignores ``vocab_file``; 4.x takes the file
        if "vocab" in inspect.signature(BertTokenizerFast.__init__).parameters:
            words = vocab.read_text(encoding="utf-8").split("\n")
            return cls(vocab={w: i for i, w in enumerate(w for w in words if w)}, do_lower_case=True, **mml)
        return cls(vocab_file=str(vocab), do_lower_case=True, **mml)
    if kind.family in ("roberta", "deberta"):
        from transformers import DebertaTokenizerFast, RobertaTokenizerFast  # type: ignore[attr-defined]  # lazy: transformers

        specials = (["<s>", "<pad>", "</s>", "<unk>", "<mask>"] if kind.family == "roberta"
                    else ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"])
        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator(_CORPUS, vocab_size=300, min_frequency=1, show_progress=False, special_tokens=specials)
        if kind.family == "roberta":
            return RobertaTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                        unk_token="<unk>", mask_token="<mask>", cls_token="<s>", sep_token="</s>",
                                        **mml)
        return DebertaTokenizerFast(tokenizer_object=bpe, bos_token="[CLS]", eos_token="[SEP]", pad_token="[PAD]",
                                    unk_token="[UNK]", mask_token="[MASK]", cls_token="[CLS]", sep_token="[SEP]", **mml)
    # SentencePiece Unigram (albert, xlm-roberta), saved as tokenizer.json as the Hub snapshots carry it
    from transformers import AlbertTokenizerFast, XLMRobertaTokenizerFast  # type: ignore[attr-defined]  # lazy: transformers

    albert = kind.family == "albert"
    specials = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"] if albert else ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    sp = SentencePieceUnigramTokenizer()
    sp.train_from_iterator(_CORPUS, vocab_size=80, special_tokens=specials, unk_token="<unk>", show_progress=False)
    cls_tok, sep_tok = ("[CLS]", "[SEP]") if albert else ("<s>", "</s>")
    ids = {t: specials.index(t) for t in (cls_tok, sep_tok)}
    sp._tokenizer.post_processor = TemplateProcessing(  # the wrapped Tokenizer, as transformers uses it
        single=f"{cls_tok} $A {sep_tok}", pair=f"{cls_tok} $A {sep_tok} $B {sep_tok}",
        special_tokens=[(cls_tok, ids[cls_tok]), (sep_tok, ids[sep_tok])])
    if albert:
        return AlbertTokenizerFast(tokenizer_object=sp, unk_token="<unk>", pad_token="<pad>", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", **mml)
    return XLMRobertaTokenizerFast(tokenizer_object=sp, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>", mask_token="<mask>", cls_token="<s>", sep_token="</s>", **mml)


def _config(kind: Kind, vocab_size: int, pad_id: int):
    import transformers  # lazy: transformers

    hidden, layers = (24, 3) if kind.large else (16, 2)
    common: dict[str, Any] = {"vocab_size": vocab_size, "pad_token_id": pad_id}
    if kind.labels:
        common.update(id2label=dict(enumerate(kind.labels)), label2id={n: i for i, n in enumerate(kind.labels)})
    if kind.family == "distilbert":
        return transformers.DistilBertConfig(dim=hidden, n_layers=layers, n_heads=2, hidden_dim=2 * hidden,
                                             max_position_embeddings=512, **common)
    shape: dict[str, Any] = {"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": 2,
             "intermediate_size": 2 * hidden}
    if kind.family == "bert":
        return transformers.BertConfig(max_position_embeddings=512, **shape, **common)
    if kind.family == "albert":
        return transformers.AlbertConfig(embedding_size=8, max_position_embeddings=512, **shape, **common)
    if kind.family == "deberta":  # deberta-base: relative positions only, no absolute table
        return transformers.DebertaConfig(max_position_embeddings=512, relative_attention=True,
                                          position_biased_input=False, pos_att_type=["c2p", "p2c"],
                                          max_relative_positions=-1, **shape, **common)
    cls = transformers.XLMRobertaConfig if kind.family == "xlm-roberta" else transformers.RobertaConfig
    return cls(max_position_embeddings=514, **shape, **common)  # positions from padding_idx + 1: 512 tokens


_HEADS = {"mlm": "ForMaskedLM", "seq": "ForSequenceClassification", "qa": "ForQuestionAnswering", "base": "Model"}
_PREFIX = {"bert": "Bert", "distilbert": "DistilBert", "albert": "Albert", "deberta": "Deberta", "roberta": "Roberta",
           "xlm-roberta": "XLMRoberta"}


def _card(kind: Kind) -> str:
    import yaml  # lazy: yaml

    head = yaml.safe_dump(kind.meta, sort_keys=False).strip() if kind.meta else ""
    title = kind.hf_id.split("/")[-1]
    return (f"---\n{head}\n---\n\n" if head else "") + f"# {title}\n\n## Model description\n\n{kind.card}\n\n" \
        "## Intended uses & limitations\n\nYou can use the raw model for masked language modeling, but it's mostly " \
        "intended to be fine-tuned on a downstream task such as sequence classification, token classification or " \
        "question answering.\n"


def make_candidate_snapshot(folder: str | Path, model_id: int, seed: int | None = None) -> Path:
    """Write the stand-in of NTCIR candidate ``model_id`` (1..20) into ``folder``; returns it."""
    import transformers  # lazy: transformers

    kind = KINDS[int(model_id)]
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tok = _tokenizer(kind, folder)
    cfg = _config(kind, len(tok), int(tok.pad_token_id))
    model_cls = getattr(transformers, _PREFIX[kind.family] + _HEADS[kind.head])
    net = _seeded_init(kind.model_id if seed is None else seed, lambda: model_cls(cfg))
    with quiet_transformers():
        net.save_pretrained(folder)
    for leftover in ("vocab.txt",):  # the WordPiece vocabulary is saved again by the tokenizer
        (folder / leftover).unlink(missing_ok=True)
    tok.save_pretrained(folder)
    if kind.head == "base":  # deberta-base and Bio_ClinicalBERT ship a config without ``architectures``
        cfg_path = folder / "config.json"
        data = json.loads(cfg_path.read_text(encoding="utf-8"))
        data.pop("architectures", None)
        cfg_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (folder / "README.md").write_text(_card(kind), encoding="utf-8")
    return folder


def write_candidate_pool(root: str | Path, ids: Sequence[int] = tuple(range(1, 21)),
                         names: Sequence[str] | None = None) -> Path:
    """The stand-ins of candidates ``ids`` in ``root/models/NN`` with ``root/models.csv`` (the organisers' ``data/``
    layout) and a pool ``root/pool.yaml`` naming each by its NTCIR name (or by ``names[i]``: the Hub's current id, a
    custom id)."""
    import yaml  # lazy: yaml

    root = Path(root)
    rows = []
    for i, m in enumerate(ids):
        folder = make_candidate_snapshot(root / "models" / f"{int(m):02d}", m)
        rows.append({"id": str(m), "hf_id": names[i] if names else KINDS[int(m)].hf_id, "path": str(folder)})
    with open(root / "models.csv", "w", encoding="utf-8-sig", newline="") as fh:  # as the organisers' data/
        fh.write("model_id,model_name,model_hf_url\n")
        fh.writelines(f"{m},{KINDS[int(m)].hf_id},https://huggingface.co/{KINDS[int(m)].hf_id}\n" for m in ids)
    pool = root / "pool.yaml"
    pool.write_text(yaml.safe_dump({"name": "ntcir19-kinds", "candidates": rows}, sort_keys=False), encoding="utf-8")
    return pool


__all__ = ["KINDS", "WITH_HEAD", "Kind", "make_candidate_snapshot", "write_candidate_pool"]
