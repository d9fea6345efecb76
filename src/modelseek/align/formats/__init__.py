"""Re-Align file formats: the model registry (JSON), the stimuli catalog (JSONL) and submissions (JSON).

Model registry
    A JSON list of entries, or ``{"models": [...]}``. Each entry::

        {"model_name": "resnet18_rand",          # unique; for timm the full tagged name is fine
                                                 # ("beitv2_base_patch16_224.in1k_ft_in1k")
         "source": "torchvision",                # a registered source: custom | open_clip | timm | torchvision |
                                                 # transformers (modelseek.retrieval.vision.sources.SOURCES)
         "weights": null,                        # null/"random": random init (seeded); "imagenet"/"pretrained"/
                                                 # "DEFAULT": the library's pretrained weights (timm: those of
                                                 # the name's tag); a library weights name or timm tag; or a
                                                 # path to a local checkpoint/folder
         "layer": "avgpool",                     # (or "layer_name") module path as in named_modules()
                                                 # ("stages.3.norm", "head.global_pool", "norm.1"; "blocks.-1"
                                                 # counts from the end) or "output" (the model's own output)
         "embedding": "pool",                    # pool | cls | flatten | mean
         "input_size": 224,                      # optional: int, [H, W] or [C, H, W], at most 2048 a side;
                                                 # default the model's crop size (timm's config, else 224)
         "preprocess": {"mean": [...], "std": [...], "resize": 256, "crop": 224, "crop_pct": 0.9},  # optional
         "output_dim": 512,                      # optional check of the embedding width (align validate --deep)
         "model_parameters": {"arch": "resnet18", "seed": 0, ...},  # optional; other keys go to the constructor
         "forward_args": {},                     # optional keyword arguments of forward()
         "modality": "image",                    # optional: image (default) | text
         "notes": "..."}

Stimuli catalog
    JSONL, one ``{"dataset_name": ..., "image_identifier": ...}`` per line (or ``"text": ...`` for text
    stimuli, used by text models). An image is found at ``<root of dataset_name>/<image_identifier>``; the
    root of a data set comes from the environment variable ``MODELSEEK_DATASET_<NAME>`` (upper case,
    non-alphanumerics as ``_``), or ``MODELSEEK_DATASETS_ROOT/<dataset_name>``, or an explicit mapping.

Submission (:class:`AlignSubmission`), in either of two forms (both read; the live form is written by default)
    live (the running challenge)::

        {"models": [{"model_name": "deit3_base_patch16_224.fb_in1k", "layer_name": "fc_norm"}, ...]}
        {"images": [{"dataset_name": "imagenet_val", "image_identifier": "ILSVRC2012_val_00005736.JPEG"}, ...]}

    (``differentiating_images`` is read as a synonym of ``images``; a model's ``layer_name`` overrides the
    registry's layer for that submission), and draft (the draft evaluation contract)::

        {"team": "blue", "models": ["name", ...]}
        {"team": "red", "stimuli": [{"dataset_name": ..., "image_identifier": ...}, ...]}

    ``team`` is optional in both (the lists imply it).

One module per format: :mod:`.choices`, :mod:`.entries` (registry), :mod:`.catalog`, :mod:`.submission`,
:mod:`.arrays` (CKA matrices and embeddings written by ``align matrix`` / ``align embed``).
"""

from __future__ import annotations

from .catalog import CATALOG_ENV, DATASET_ENV_PREFIX, DATASETS_ROOT_ENV, Stimulus, StimulusCatalog, parse_stimulus
from .choices import Modality, Strategy, SubmissionForm, Team
from ...retrieval.vision.entries import (
    IMAGENET_MEAN, IMAGENET_STD, MAX_INPUT_SIDE, MAX_RESIZE_SIDE, REGISTRY_ENV, ModelEntry,
                      ModelRegistry, Preprocess)
from .submission import AlignSubmission, ModelChoice, load_align_submission, validate_align_submission

__all__ = ["CATALOG_ENV", "DATASETS_ROOT_ENV", "DATASET_ENV_PREFIX", "IMAGENET_MEAN", "IMAGENET_STD", "MAX_INPUT_SIDE",
           "MAX_RESIZE_SIDE", "REGISTRY_ENV", "AlignSubmission", "Modality", "ModelChoice", "ModelEntry",
           "ModelRegistry", "Preprocess", "Stimulus", "StimulusCatalog", "Strategy", "SubmissionForm", "Team",
           "load_align_submission", "parse_stimulus", "validate_align_submission"]
