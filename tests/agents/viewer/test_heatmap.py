import pytest

from agents.viewer.heatmap import blend, colour, contrast, readable, segments, text_colour, value_names, value_scales


def test_colour_is_blue_above_the_centre_red_below_with_opacity_by_distance_over_the_scale():
    assert colour(0.5, scale=2.0) == "rgba(31, 119, 180, 0.2125)"  # 0.85 · 0.25
    assert colour(-1.0, scale=2.0) == "rgba(214, 39, 40, 0.425)"
    assert colour(9.0, scale=2.0) == "rgba(31, 119, 180, 0.85)"  # capped at the scale
    assert colour(1.5, scale=1.0, centre=1.0) == "rgba(31, 119, 180, 0.425)"  # weights centre on 1
    assert colour(0.75, scale=1.0, centre=1.0) == "rgba(214, 39, 40, 0.2125)"
    assert colour(0.0, scale=1.0) == colour(3.0, scale=0.0) == "rgba(0, 0, 0, 0)"


def test_scales_are_the_largest_distance_from_each_values_centre():
    turns = [{"values": {"advantage": [0.25, -1.5], "weight": [1.25, 0.5], "delta": []}}, {"values": {"zeta": [2.0]}}]
    scales = value_scales(turns)
    assert scales == {"advantage": 1.5, "weight": 0.5, "delta": 0.0, "zeta": 2.0}
    assert value_names(scales) == ["advantage", "delta", "weight", "zeta"]


def test_segments_cover_the_raw_output_in_order_and_mark_the_action():
    raw = "<a>big cat</a>"
    # A response prefix "<a>" outside the tokens, then tokens "big", " cat", "</a>" and an empty one.
    offsets = [(3, 6), (6, 10), (10, 14), (14, 14)]
    pieces = segments(raw, offsets, (3, 10))
    assert [(p.text, p.token, p.in_action) for p in pieces] == [
        ("<a>", None, False),
        ("big", 0, True),
        (" cat", 1, True),
        ("</a>", 2, False),
        ("", 3, False),
    ]
    assert "".join(p.text for p in pieces) == raw


def test_text_outside_tokens_is_split_at_the_action_and_nothing_is_lost():
    pieces = segments("abcdef", [(4, 5)], (1, 3))
    assert [(p.text, p.token, p.in_action) for p in pieces] == [
        ("a", None, False),
        ("bc", None, True),
        ("d", None, False),
        ("e", 0, False),
        ("f", None, False),
    ]
    assert segments("", [], None) == []


@pytest.mark.parametrize("offsets", [[(0, 9)], [(2, 1)], [(3, 4), (1, 2)]])
def test_offsets_past_the_text_or_out_of_order_never_duplicate_or_raise(offsets):
    pieces = segments("abcd", offsets, None)
    assert "".join(p.text for p in pieces) == "abcd"


@pytest.mark.parametrize(
    ("text", "offsets", "span"),
    [
        ("<a>x y</a>z", [(3, 4), (5, 6), (6, 6), (10, 11)], (3, 6)),  # a gap, an empty token, a tail
        ("abcd", [(3, 4), (1, 2), (0, 9)], None),  # out of order, past the text
        ("prefix only", [], (0, 3)),
    ],
)
def test_the_windows_of_a_turns_pages_joined_are_its_segments(text, offsets, span):
    whole = segments(text, offsets, span)
    for size in (1, 2, 3):
        cuts = [*range(0, len(offsets), size), len(offsets)] if offsets else [0, 0]
        bounds = list(zip(cuts, cuts[1:], strict=False))
        windows = [segments(text, offsets, span, window) for window in bounds]
        assert [piece for window in windows for piece in window] == whole
        for (first, end), window in zip(bounds, windows, strict=True):
            assert all(piece.token is None or first <= piece.token < end for piece in window)


@pytest.mark.parametrize("value", [k / 20 for k in range(-20, 21)])
def test_a_tokens_text_contrasts_at_least_4_5_to_1_with_its_colour_at_any_value(value):
    background = colour(value, scale=1.0)
    text = (0, 0, 0) if text_colour(background) == "#000" else (255, 255, 255)
    assert contrast(text, blend(background)) >= 4.5


def test_what_a_font_may_not_draw_is_escaped_and_the_rest_kept():
    assert readable("Price: $12.50 – café, naïve, Ωμέγα, привет → ≤ ∅") == [
        ("Price: $12.50 – café, naïve, Ωμέγα, привет → ≤ ∅", False)
    ]
    assert readable("a\nb c") == [("a\nb c", False)]  # newlines and spaces are text
    odd = "\x00\x1b\u200b\u00ad\ue000\u0301\u3000\ufffd中😀"  # controls, invisible, private, combining, CJK, emoji
    assert readable(odd) == [(odd.encode("unicode_escape").decode("ascii"), True)]
