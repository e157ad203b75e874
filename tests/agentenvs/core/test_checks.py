"""The shared constructor-argument checks: types, ranges and messages naming the argument."""

import math
from pathlib import Path

import numpy as np
import pytest

from agentenvs.core.checks import (
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_path,
    check_str,
    check_str_sequence,
)


def test_int_accepts_integers_and_numpy_integers():
    assert check_int("Env", "top_k", 3, minimum=1) == 3
    value = check_int("Env", "top_k", np.int64(4), minimum=1, maximum=4)
    assert value == 4 and type(value) is int
    assert check_int("Env", "num", None, minimum=1, optional=True) is None


@pytest.mark.parametrize("bad", [2.7, 3.0, True, False, np.bool_(True), "3", "abc", None, [3], np.float64(2.0)])
def test_int_rejects_non_integers_naming_the_argument(bad):
    with pytest.raises(TypeError, match=r"^SearchQAEnv.max_turns must be an integer >= 1, got "):
        check_int("SearchQAEnv", "max_turns", bad, minimum=1)


def test_int_messages_are_exact():
    with pytest.raises(TypeError) as error:
        check_int("SearchQAEnv", "max_turns", 2.7, minimum=1)
    assert str(error.value) == "SearchQAEnv.max_turns must be an integer >= 1, got 2.7"
    with pytest.raises(TypeError) as error:
        check_int("WebShopEnv", "generator_seed", "abc")
    assert str(error.value) == "WebShopEnv.generator_seed must be an integer, got 'abc'"
    with pytest.raises(ValueError) as error:
        check_int("Env", "top_k", 0, minimum=1, maximum=50)
    assert str(error.value) == "Env.top_k must be an integer in [1, 50], got 0"
    with pytest.raises(ValueError) as error:
        check_int("Env", "num_products", -1, minimum=1, optional=True)
    assert str(error.value) == "Env.num_products must be an integer >= 1 or None, got -1"


def test_float_bounds_and_types():
    assert check_float("Env", "f", 1) == 1.0 and type(check_float("Env", "f", np.float32(0.5))) is float
    assert check_float("Env", "f", 0.5, minimum=0, maximum=1, min_inclusive=False, max_inclusive=False) == 0.5
    for edge in (0.0, 1.0):
        with pytest.raises(ValueError, match=r"Env.f must be a finite number in \(0, 1\), got"):
            check_float("Env", "f", edge, minimum=0, maximum=1, min_inclusive=False, max_inclusive=False)
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="finite number"):
            check_float("Env", "f", bad)
    for bad in (True, "0.5", None, 1j):
        with pytest.raises(TypeError, match="Env.f must be a finite number"):
            check_float("Env", "f", bad)
    assert check_float("Env", "f", None, optional=True) is None


def test_bool_is_strict():
    assert check_bool("Env", "flag", True) is True and check_bool("Env", "flag", np.bool_(False)) is False
    for bad in (0, 1, "false", None, 1.0):
        with pytest.raises(TypeError, match="Env.flag must be True or False, got"):
            check_bool("Env", "flag", bad)


def test_str_and_choice():
    assert check_str("Env", "tagger", "rules") == "rules"
    assert check_str("Env", "x", "", non_empty=False) == ""
    with pytest.raises(ValueError, match="non-empty string"):
        check_str("Env", "tagger", "  ")
    with pytest.raises(TypeError, match="Env.tagger must be a non-empty string, got 3"):
        check_str("Env", "tagger", 3)
    assert check_choice("Env", "mode", "html", ("text", "html")) == "html"
    assert check_choice("Env", "render_mode", None, (None, "ansi")) is None
    with pytest.raises(ValueError, match=r"^Env.mode must be one of 'text', 'html', got 'HTML'$"):
        check_choice("Env", "mode", "HTML", ("text", "html"))
    for bad in (["text"], {"text": 1}, 1, True, None):  # unhashable or same-as-True values must not match or crash
        with pytest.raises(ValueError, match="Env.mode must be one of"):
            check_choice("Env", "mode", bad, ("text", "html"))


def test_path_and_sequences():
    assert check_path("Env", "data_path", None) is None and check_path("Env", "data_path", "") is None
    assert check_path("Env", "data_path", Path("x")) == Path("x") and check_path("Env", "data_path", "x") == "x"
    for bad in (3, b"x", ["x"]):
        with pytest.raises(TypeError, match="Env.data_path must be a path"):
            check_path("Env", "data_path", bad)
    assert check_str_sequence("Env", "kinds", "1hop") == ("1hop",)
    assert check_str_sequence("Env", "kinds", ["1hop", "2hop"]) == ("1hop", "2hop")
    with pytest.raises(ValueError, match="non-empty sequence"):
        check_str_sequence("Env", "kinds", [])
    with pytest.raises(TypeError, match="got item 3"):
        check_str_sequence("Env", "kinds", ["1hop", 3])
    with pytest.raises(TypeError, match="Env.kinds must be"):
        check_str_sequence("Env", "kinds", 5)


def test_messages_stay_encodable():
    with pytest.raises(TypeError) as error:
        check_int("Env", "n", "\ud800" * 200)
    message = str(error.value)
    message.encode("utf-8")
    assert len(message) < 200
