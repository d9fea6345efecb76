"""The config layer (modelseek.core.config), the one reader (modelseek.core.io) and the argparse option types:
property tests over generated values and documents, plus the located messages users see."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from modelseek.cli._common import (OUTPUT_FILE, PORT, PROBABILITY, SEED, choice, existing_file, int_at_least,
                                   metavar)
from modelseek.core.config import NONFINITE, Config, Interval, Options, Source, check, coerce, parse_overrides
from modelseek.core.enums import Choice
from modelseek.core.errors import InputError
from modelseek.core.io import decode_text, loads_json, loads_yaml_located, read_config, read_json, read_text

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class Colour(Choice):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


@dataclass(frozen=True)
class Inner(Config):
    rate: float = 0.5
    names: tuple[str, ...] = ()

    _constraints = {"rate": [Interval(Real, 0, 1, closed="neither")]}


@dataclass(frozen=True)
class Outer(Config):
    size: int = 16
    scale: float = 1.0
    flag: bool = True
    colour: Colour = Colour.RED
    seed: int | None = None
    label: str = ""
    where: Path | None = None
    pair: tuple[int, float] = (1, 2.0)
    inner: Inner = Inner()
    items: tuple[Inner, ...] = ()
    mode: str = "a"
    loose: float = 0.0

    _constraints = {
        "size": [Interval(Integral, 1, None, closed="left")],
        "seed": [Interval(Integral, 0, None, closed="left")],
        "mode": [Options("a", "b")],
        "loose": [NONFINITE, Interval(Real, None, None, closed="neither")],
    }

    def _check(self) -> None:
        if self.size % 2 and self.flag:
            raise InputError("odd size needs flag: false", field="size")


finite = st.floats(allow_nan=False, allow_infinity=False)
names = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
inner_st = st.builds(Inner, rate=st.floats(0, 1, exclude_min=True, exclude_max=True),
                     names=st.lists(names, max_size=3).map(tuple))
outer_st = st.builds(
    Outer, size=st.integers(1, 10**6).map(lambda n: 2 * n), scale=finite, flag=st.booleans(),
    colour=st.sampled_from(list(Colour)), seed=st.none() | st.integers(0, 2**63), label=names,
    where=st.none() | st.just(Path("a/b.txt")), pair=st.tuples(st.integers(), finite), inner=inner_st,
    items=st.lists(inner_st, max_size=3).map(tuple), mode=st.sampled_from(["a", "b"]),
    loose=st.floats(allow_nan=False))


# ------------------------------------------------------------------------------------------ from_mapping
@SETTINGS
@given(outer_st)
def test_round_trip_through_plain_data_and_json(cfg):
    plain = cfg.to_mapping()
    assert Outer.from_mapping(plain) == cfg
    if math.isfinite(cfg.loose):
        assert Outer.from_mapping(json.loads(json.dumps(plain))) == cfg


@SETTINGS
@given(st.text(min_size=1, max_size=12))
def test_unknown_key_is_refused_with_the_valid_keys(key):
    assume(key not in Outer.__dataclass_fields__)
    with pytest.raises(InputError) as ei:
        Outer.from_mapping({key: 1}, source="cfg.yaml")
    assert ei.value.field == key and ei.value.path == "cfg.yaml"
    assert "valid keys: size, scale, flag" in ei.value.message


def test_did_you_mean_and_line():
    data, lines = loads_yaml_located("size: 4\ncolr: blue\n")
    with pytest.raises(InputError) as ei:
        Outer.from_mapping(data, source=Source("c.yaml", lines))
    assert str(ei.value).startswith("c.yaml:2: field 'colr': unknown key 'colr' (did you mean 'colour'?)")


@pytest.mark.parametrize("text, field, line, words", [
    ("size: 0\n", "size", 1, "must be an integer >= 1, got 0"),
    ("size: 2\nscale: .nan\n", "scale", 2, "finite"),
    ("size: 2.5\n", "size", 1, "must be an integer, got 2.5"),
    ("flag: yes-please\n", "flag", 1, "true or false"),
    ("colour: gren\n", "colour", 1, "did you mean 'green'"),
    ("seed: -3\n", "seed", 1, ">= 0"),
    ("mode: c\n", "mode", 1, "one of 'a', 'b'"),
    ("pair: [1, 2, 3]\n", "pair", 1, "2 items"),
    ("size: 2\ninner:\n  rate: 1\n", "inner.rate", 3, "in (0, 1)"),
    ("items:\n  - rate: 0.5\n  - rate: 0.5\n    nams: [a]\n", "items[1].nams", 4, "did you mean 'names'"),
    ("inner: 3\n", "inner", 1, "mapping"),
    ("size: 3\n", "size", 1, "odd size"),
    ("scale: 100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000000\n", "scale", 1,
     "too large"),
])
def test_errors_name_file_line_and_dotted_field(tmp_path, text, field, line, words):
    p = tmp_path / "c.yaml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as ei:
        Outer.from_file(p)
    e = ei.value
    assert (e.path, e.line, e.field) == (str(p), line, field) and words in e.message
    assert str(e).startswith(f"{p}:{line}: field '{field}': ")


def test_construction_coerces_and_validates():
    c = Outer(size="8", scale="1e-3", colour=" BLUE ", seed="7", where="x/y", loose=math.inf)
    assert (c.size, c.scale, c.colour, c.seed, c.where, c.loose) == (8, 1e-3, Colour.BLUE, 7, Path("x/y"), math.inf)
    assert Inner(names="solo").names == ("solo",)  # a lone string where a list is expected
    with pytest.raises(InputError, match="valid values: red, green, blue"):
        Outer(colour="purple")
    assert Outer().replace(size=6).size == 6


def test_empty_file_gives_defaults_and_non_mapping_is_refused(tmp_path):
    (tmp_path / "e.yaml").write_text("", encoding="utf-8")
    assert Outer.from_file(tmp_path / "e.yaml") == Outer()
    (tmp_path / "l.yaml").write_text("- 1\n", encoding="utf-8")
    with pytest.raises(InputError, match="must be a mapping"):
        Outer.from_file(tmp_path / "l.yaml")


def test_required_key():
    @dataclass(frozen=True)
    class Needs(Config):
        name: str

    with pytest.raises(InputError) as ei:
        Needs.from_mapping({}, source="n.yaml")
    assert ei.value.field == "name" and "required" in ei.value.message


# ------------------------------------------------------------------------------------------ constraints
bounds = st.none() | st.integers(-5, 5)


@SETTINGS
@given(st.integers(-8, 8) | st.floats(-8, 8), bounds, bounds, st.sampled_from(["both", "left", "right", "neither"]))
def test_interval_agrees_with_comparison(x, lo, hi, closed):
    assume(lo is None or hi is None or lo <= hi)
    iv = Interval(Real, lo, hi, closed=closed)
    expected = ((lo is None or x > lo or (x == lo and closed in ("both", "left")))
                and (hi is None or x < hi or (x == hi and closed in ("both", "right"))))
    assert iv.is_satisfied_by(x) == expected
    assert Interval(Integral, lo, hi, closed=closed).is_satisfied_by(x) == (expected and isinstance(x, int))
    if not expected:
        with pytest.raises(InputError, match="must be a number"):
            check(x, [iv], "f")


@SETTINGS
@given(st.floats())
def test_float_coercion_refuses_nonfinite_by_default(x):
    if math.isfinite(x):
        assert coerce(x, float) == x and coerce(repr(x), float) == x
    else:
        with pytest.raises(InputError, match="finite"):
            coerce(x, float, "f")
        assert coerce(x, float, nonfinite=True) is x or math.isnan(x)


@SETTINGS
@given(st.integers() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=5))
def test_int_coercion_is_strict(v):
    try:
        out = coerce(v, int, "n")
    except InputError as exc:
        assert exc.field == "n" and "integer" in exc.message
        assert isinstance(v, (bool, float)) or (isinstance(v, str) and not v.strip().lstrip("+-").isdigit())
    else:
        assert isinstance(out, int) and not isinstance(v, (bool, float)) and out == int(v)


# ------------------------------------------------------------------------------------------ the reader
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | finite | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12)


@SETTINGS
@given(json_values)
def test_strict_json_reads_what_json_writes(value):
    assert loads_json(json.dumps(value, indent=1)) == value


@SETTINGS
@given(json_values, st.sampled_from(["1e999", "-1e400", "NaN", "Infinity", "-Infinity", "12.5e+9999"]))
def test_json_nonfinite_numbers_are_refused_on_their_line(value, bad):
    text = json.dumps({"before": value, "bad": "__BAD__"}, indent=1).replace('"__BAD__"', bad)
    line = text.splitlines().index(next(ln for ln in text.splitlines() if bad in ln and '"bad"' in ln)) + 1
    with pytest.raises(InputError) as ei:
        loads_json(text, "x.json")
    assert ei.value.path == "x.json" and ei.value.line == line


@SETTINGS
@given(st.binary(max_size=40))
def test_decode_names_the_first_bad_byte(data):
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # a UTF-16 byte-order mark: the encoding is named (issue #52)
        with pytest.raises(InputError) as ei:
            decode_text(data, "f.txt")
        assert "UTF-16" in ei.value.message or "UTF-32" in ei.value.message
        assert ei.value.line == 1
        return
    try:
        expected = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        with pytest.raises(InputError) as ei:
            decode_text(data, "f.txt")
        assert f"byte 0x{data[exc.start]:02x} at offset {exc.start}" in ei.value.message
        assert ei.value.line == data[:exc.start].count(b"\n") + 1
    else:
        assert decode_text(data) == expected.removeprefix("\ufeff")


def test_reader_file_errors(tmp_path):
    with pytest.raises(InputError, match="is a directory, expected a file"):
        read_text(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        read_json(tmp_path / "nope.json")
    (tmp_path / "b.json").write_bytes(b'{"a":\n "caf\xe9"}')
    with pytest.raises(InputError) as ei:
        read_json(tmp_path / "b.json")
    assert str(ei.value) == f"{tmp_path / 'b.json'}:2: not UTF-8 text (byte 0xe9 at offset 11)"
    (tmp_path / "m.json").write_text('{"a": 1,\n "b": }', encoding="utf-8")
    with pytest.raises(InputError, match=r"m.json:2: malformed JSON"):
        read_json(tmp_path / "m.json")
    (tmp_path / "y.yaml").write_text("a: 1\nb: [1, 2\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"y.yaml:3: invalid YAML"):
        read_config(tmp_path / "y.yaml")
    (tmp_path / "d.yaml").write_text("a: 1\nb: 2\na: 3\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"d.yaml:3: field 'a': duplicate key \(first on line 1\)"):
        read_config(tmp_path / "d.yaml")
    (tmp_path / "c.yaml").write_text("a: 1\nb: \x00\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"c.yaml:2: invalid YAML"):
        read_config(tmp_path / "c.yaml")


def test_yaml_key_lines():
    _, lines = loads_yaml_located("a: 1\nb:\n  - x: 1\n    y: 2\n  - z\nc: {d: 1}\n")
    assert lines == {"": 1, "a": 1, "b": 2, "b[0]": 3, "b[0].x": 3, "b[0].y": 4, "b[1]": 5, "c": 6, "c.d": 6}


def test_parse_overrides():
    assert parse_overrides(["a=5", "b.c=1.0e-3", "d=[x, y]", "e=true", "f="]) == {
        "a": 5, "b": {"c": 1e-3}, "d": ["x", "y"], "e": True, "f": None}
    with pytest.raises(InputError, match="KEY=VALUE"):
        parse_overrides(["novalue"])
    with pytest.raises(InputError, match="invalid YAML"):
        parse_overrides(["a=[1"])


# ------------------------------------------------------------------------------------------ option types
def _parse(argv, **kw):
    p = argparse.ArgumentParser(prog="t", exit_on_error=False)
    p.add_argument("--x", **kw)
    return p.parse_args(argv).x


@pytest.mark.parametrize("kind, good, bad, words", [
    (SEED, ("0", 0), "-1", "must be an integer in [0, 4294967295], got -1"),
    (SEED, ("42", 42), "4.5", "must be an integer, got '4.5'"),
    (PROBABILITY, ("0.05", 0.05), "1", "must be a number in (0, 1), got 1.0"),
    (PROBABILITY, ("0.5", 0.5), "nan", "finite"),
    (PORT, ("8080", 8080), "70000", "[1, 65535]"),
    (int_at_least(2), ("2", 2), "1", ">= 2"),
    (choice(Colour), ("Red", Colour.RED), "gren", "did you mean 'green'"),
])
def test_option_types(kind, good, bad, words):
    assert _parse(["--x", good[0]], type=kind) == good[1]
    with pytest.raises(argparse.ArgumentError) as ei:
        _parse(["--x", bad], type=kind)
    assert words in str(ei.value)


def test_option_types_exit_2_with_usage(capsys):
    p = argparse.ArgumentParser(prog="t")
    p.add_argument("--seed", type=SEED)
    with pytest.raises(SystemExit) as ei:
        p.parse_args(["--seed", "-5"])
    assert ei.value.code == 2
    assert "t: error: argument --seed: must be an integer in [0, 4294967295], got -5" in capsys.readouterr().err
    assert metavar(Colour) == "{red,green,blue}"


def test_path_option_types(tmp_path):
    (tmp_path / "f").write_text("x")
    assert Path(existing_file(str(tmp_path / "f"))) == tmp_path / "f"  # an InputFile (a str naming its kind)
    for bad, words in ((tmp_path, "is a directory"), (tmp_path / "nope", "no such file")):
        with pytest.raises(argparse.ArgumentTypeError, match=words):
            existing_file(str(bad))
    assert OUTPUT_FILE(str(tmp_path / "new" / "deeper" / "out.txt")) == tmp_path / "new" / "deeper" / "out.txt"
    with pytest.raises(argparse.ArgumentTypeError, match="is a directory"):
        OUTPUT_FILE(str(tmp_path))
    with pytest.raises(argparse.ArgumentTypeError, match="not a directory"):
        OUTPUT_FILE(str(tmp_path / "f" / "out.txt"))
