"""Subtask B of NTCIR-19 Model Retrieval: which style LoRA made this image?

Data (:mod:`.data`; the organisers' layout as cloned: :mod:`.layout`; checked image reading: :mod:`.images`),
style descriptors (:mod:`.descriptors`), retrievers (:mod:`.retrievers`), the
end-to-end pipeline with grouped cross-validation, runs and MRR (:mod:`.pipeline`) and a generated
benchmark (:mod:`.generated`), the organisers' fine-tuned baseline (:mod:`.baseline`), evaluation against
``train.csv`` and the test folder (:mod:`.evaluation`) and an organisers'-format generator (:mod:`.synthetic`).
Heavy libraries (torch, PIL, scikit-image) are imported on use.
"""

from .data import (StyleDataset, StyleModels, load_folder_dataset, load_models, load_query_folder,
                   load_subtask_b_test, load_subtask_b_train, read_image)
from .generated import generated_style_dataset, make_styles
from .layout import load_organiser_test, load_organiser_train, organiser_root
from .pipeline import (BASELINE, DEFAULT_METHODS, StyleCVResult, StyleRanker, chance_mrr, content_folds,
                       cross_validate_style, parse_method, style_truth)

__all__ = [
    "BASELINE", "DEFAULT_METHODS", "StyleCVResult", "StyleDataset", "StyleModels", "StyleRanker", "chance_mrr",
    "content_folds", "cross_validate_style", "generated_style_dataset", "load_folder_dataset", "load_models",
    "load_organiser_test", "load_organiser_train", "load_query_folder", "load_subtask_b_test", "load_subtask_b_train",
    "make_styles", "organiser_root", "parse_method", "read_image", "style_truth",
]
