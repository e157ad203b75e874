import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.algorithms.taspo.guidance import (
    GuidanceItem,
    build_analysis_prompt,
    lm_guidance,
    parse_guidance,
    raw_trajectory_text,
    rule_based_guidance,
)
from tests.support.privileged import toy_group


def test_rule_based_items_cover_all_kinds_with_evidence():
    group = toy_group()
    wins = [t for t in group if t.success]
    items = rule_based_guidance(wins).items
    kinds = [item.kind for item in items]
    assert kinds[:4] == ["requirement", "order", "progress", "alternative"]  # kinds interleaved
    first = items[0]  # supported by both successful siblings -> ranked first
    assert first.kind == "requirement" and first.anchors == ("desk 1",) and '"go to desk 1"' in first.text
    assert 'saw "You are in a room.' in first.evidence
    take = next(i for i in items if i.kind == "requirement" and "take pen 2" in i.text)
    assert take.anchors == ("pen 2", "desk 1")  # grounded: both observed before the action
    progress = next(i for i in items if i.kind == "progress" and "take pen 2" in i.text)
    assert "You pick up the pen 2" in progress.text
    assert any(i.kind == "order" and i.text == 'Do "take pen 2 from desk 1" before "go to drawer 1".' for i in items)
    # Step 1 differs between the two successes ("go to desk 1" vs "look"): an alternative.
    alternative = [i for i in items if i.kind == "alternative"]
    assert alternative and '"go to desk 1" and "look"' in alternative[0].text
    # No duplicates although both siblings share most steps.
    assert len({(i.kind, i.text) for i in items}) == len(items)


def test_rule_based_caps_and_counts():
    wins = [t for t in toy_group() if t.success]
    capped = rule_based_guidance(wins, max_items=3)
    assert len(capped.items) == 3 and capped.dropped == len(rule_based_guidance(wins).items) - 3
    assert rule_based_guidance([]).items == []


def test_parse_guidance_lines_and_drops():
    text = (
        "1. requirement | When pen 2 is in view, take it. | pen 2, Desk 1 | saw pen 2\n"
        "ORDER | Go to desk before drawer. | desk 1, drawer 1\n"
        "progress | no anchors here |  | x\n"
        "bogus | text | a\n"
        "just prose without bars\n"
    )
    analysis = parse_guidance(text)
    assert [(i.kind, i.anchors) for i in analysis.items] == [
        ("requirement", ("pen 2", "desk 1")),
        ("order", ("desk 1", "drawer 1")),
    ]
    assert analysis.items[0].evidence == "saw pen 2" and analysis.dropped == 2


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_parse_guidance_never_raises(text):
    analysis = parse_guidance(text, max_items=4)
    assert len(analysis.items) <= 4 and analysis.dropped >= 0


def test_lm_guidance_uses_one_prompt_of_successes():
    wins = [t for t in toy_group() if t.success]
    prompts = []

    def complete(batch):
        prompts.extend(batch)
        return ["requirement | When pen 2 is in view, take it. | pen 2 | take pen 2 from desk 1"]

    analysis = lm_guidance(wins, complete)
    assert len(prompts) == 1 and "Successful attempt 2" in prompts[0] and "take pen 2 from desk 1" in prompts[0]
    assert analysis.items[0].anchors == ("pen 2",)
    assert lm_guidance([], complete).items == [] and len(prompts) == 1
    assert "KIND | guidance" in build_analysis_prompt(wins)


def test_guidance_item_validation_and_raw_text():
    with pytest.raises(ValueError, match="kind"):
        GuidanceItem("hint", "x", ("a",))
    with pytest.raises(ValueError, match="anchor"):
        GuidanceItem("order", "x", ())
    text = raw_trajectory_text(toy_group().trajectories[0])
    assert text.splitlines()[1:3] == ["1. go to desk 1", "2. take pen 2 from desk 1"]
