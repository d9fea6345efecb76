"""Subtask B layout and folder-per-label loading, with the errors bad input must give."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from modelseek.core.errors import InputError
from modelseek.style import (load_folder_dataset, load_models, load_query_folder, load_subtask_b_test,
                             load_subtask_b_train, read_image)
from modelseek.style.data import read_image_list


def test_subtask_b_train_ids_labels_groups(b_layout):
    ds = load_subtask_b_train(b_layout)
    assert len(ds) == 4 * 4
    assert ds.ids[0] == "train-0001-0001"  # no .png suffix
    assert ds.labels[:5] == ["1", "2", "3", "4", "1"]
    assert set(ds.groups) == {"1", "2", "3", "4"}
    assert ds.models.ids == ("1", "2", "3", "4")
    assert ds.models.name("2").startswith("style ")
    img = ds.image(0, size=16)
    assert img.shape == (16, 16, 3) and img.dtype == np.uint8


def test_subtask_b_test_ids_keep_hyphenated_names(b_layout):
    ds = load_subtask_b_test(b_layout)
    assert ds.labels is None
    assert ds.ids[0] == "test-0005-0011"
    assert all(not i.endswith(".png") for i in ds.ids)


def test_label_not_in_models_csv_names_line_and_field(b_layout):
    path = b_layout / "train.csv"
    rows = list(csv.reader(open(path)))
    rows[3][2] = "99"
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    with pytest.raises(InputError) as exc:
        load_subtask_b_train(b_layout)
    assert exc.value.line == 4 and exc.value.field == "model_id"
    assert "'99' is not in models.csv" in str(exc.value)


def test_missing_image_is_named(b_layout):
    (b_layout / "images" / "train" / "train-0002-0003.png").unlink()
    with pytest.raises(InputError, match="train-0002-0003.png"):
        load_subtask_b_train(b_layout)


def test_missing_images_folder(b_layout, tmp_path):
    with pytest.raises(InputError, match="images folder not found"):
        load_subtask_b_train(b_layout, images=tmp_path / "nowhere")


def test_unreadable_image(tmp_path):
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n this is not an image")
    with pytest.raises(InputError) as exc:
        read_image(bad)
    assert exc.value.path == str(bad) and "cannot decode image" in str(exc.value)
    with pytest.raises(InputError, match="does not exist"):
        read_image(tmp_path / "absent.png")


def test_unreadable_image_in_a_dataset_fails_at_feature_time(b_layout):
    from modelseek.style.descriptors import extract, make_extractor

    ds = load_subtask_b_train(b_layout)
    Path(ds.paths[5]).write_bytes(b"garbage")
    with pytest.raises(InputError, match="cannot decode image"):
        extract(ds, make_extractor("hist"), size=16)


def test_models_csv_errors(tmp_path):
    p = tmp_path / "models.csv"
    p.write_text("id,model_name\n1,a\n2,b\n1,c\n")
    with pytest.raises(InputError) as exc:
        load_models(p)
    assert exc.value.line == 4 and exc.value.field == "id"
    p.write_text("name\nx\n")
    with pytest.raises(InputError, match="missing column"):
        load_models(p)


def _folder_set(root: Path, labels=("a", "b"), stems=("c1", "c2")) -> Path:
    for lab in labels:
        (root / lab).mkdir(parents=True)
        for k, s in enumerate(stems):
            value = 40 * k + (100 if lab == "b" else 0)
            Image.fromarray(np.full((8, 8, 3), value, np.uint8)).save(root / lab / f"{s}.png")
    return root


def test_folder_per_label(tmp_path):
    ds = load_folder_dataset(_folder_set(tmp_path / "set"))
    assert ds.models.ids == ("a", "b")
    assert ds.ids == ["a/c1", "a/c2", "b/c1", "b/c2"]
    assert ds.groups == ["c1", "c2", "c1", "c2"]
    assert ds.labels == ["a", "a", "b", "b"]


def test_folder_label_not_in_models_csv(tmp_path):
    root = _folder_set(tmp_path / "set", labels=("1", "7"))
    models = tmp_path / "models.csv"
    models.write_text("id,model_name\n1,one\n2,two\n")
    with pytest.raises(InputError) as exc:
        load_folder_dataset(root, models)
    assert "'7' is not in models.csv" in str(exc.value) and exc.value.field == "label"
    ok = load_folder_dataset(_folder_set(tmp_path / "ok", labels=("1", "2")), models)
    assert ok.models.ids == ("1", "2")


def test_query_folder_ids(tmp_path):
    d = tmp_path / "q"
    d.mkdir()
    for name in ("test-0001-0011.png", "0007.png"):
        Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(d / name)
    ds = load_query_folder(d, load_folder_dataset(_folder_set(tmp_path / "set")).models)
    assert sorted(ds.ids) == ["7", "test-0001-0011"]


def test_real_subtask_b_metadata(shared_b):
    models = load_models(shared_b / "models.csv")
    assert len(models) == 85 and models.ids[0] == "1" and models.ids[-1] == "85"
    names = read_image_list(shared_b / "test-image-ids.txt")
    assert len(names) == 3825 and names[0] == "test-0001-0011.png"
    # the images are not distributed with the metadata: the loader says so instead of failing later
    with pytest.raises(InputError, match="images folder not found"):
        load_subtask_b_train(shared_b)
