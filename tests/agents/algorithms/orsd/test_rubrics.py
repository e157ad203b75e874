from hypothesis import given, settings
from hypothesis import strategies as st

from agentenvs.core.trajectory import TrajectoryGroup
from agents.algorithms.orsd.rubrics import (
    RubricItem,
    contrastive_rubric_bundles,
    parse_rubric_bundle,
    parse_rubric_line,
    propose_rubric_bundles,
)
from tests.support.privileged import toy_group


def test_parse_structured_and_free_text_lines():
    bundle = parse_rubric_bundle(
        "Here is the rubric:\n1. REQUIRE: Take pen 2 from desk 1\n2) ORDER: go to desk 1 -> go to drawer 1\n"
        "- AVOID: look\n* MENTION: Pen 2\n3. The agent checks the drawer before leaving.\nthanks"
    )
    assert [item.kind for item in bundle.items] == ["requires", "order", "avoids", "mentions", "text"]
    assert bundle.items[0].args == ("take pen 2 from desk 1",)
    assert bundle.items[1].args == ("go to desk 1", "go to drawer 1")
    assert bundle.items[3].args == ("pen 2",)


def test_unparsable_outputs_give_none():
    assert parse_rubric_bundle("") is None
    assert parse_rubric_bundle("Sure! I will write it.") is None
    assert parse_rubric_line("1. ORDER: only one side") is None
    assert parse_rubric_line("1. ok") is None  # too short to be a rubric item


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_parser_never_raises(text):
    bundle = parse_rubric_bundle(text, max_items=3)
    assert bundle is None or 1 <= len(bundle.items) <= 3


def test_propose_counts_dropped_bundles():
    outputs = iter(["1. REQUIRE: go to desk 1", "gibberish", "1. AVOID: look\n2. AVOID: look", "???"])
    result = propose_rubric_bundles(toy_group(), lambda prompts: [next(outputs) for _ in prompts], num_bundles=4)
    assert result.dropped == 2
    assert [len(bundle.items) for bundle in result.bundles] == [1, 1]  # duplicate item merged


def test_contrastive_bundles_hand_checked():
    bundles = {b.source: b for b in contrastive_rubric_bundles(toy_group(), max_items=3).bundles}
    # take pen 2: both wins, no loss -> gap 1; put pen 2: gap 1; go to desk 1: wins 2/2, losses 1/2 -> 0.5.
    assert [i.args[0] for i in bundles["contrastive:requires"].items] == [
        "take pen 2 from desk 1",
        "put pen 2 in/on drawer 1",
        "go to desk 1",
    ]
    # look: wins 1/2, losses 2/2 -> gap -0.5; take mug 1: 0 vs 1/2 -> -0.5 (first seen in losses first: look).
    assert [i.args[0] for i in bundles["contrastive:avoids"].items] == ["look", "take mug 1 from desk 1"]
    assert bundles["contrastive:mentions"].items[0] == RubricItem.mentions("pen 2")
    assert bundles["contrastive:order"].items[0].args == ("go to desk 1", "take pen 2 from desk 1")


def test_contrastive_needs_both_outcomes_and_respects_min_gap():
    group = toy_group()
    wins = TrajectoryGroup("toy", 0, [t for t in group if t.success])
    assert contrastive_rubric_bundles(wins).bundles == []
    strict = contrastive_rubric_bundles(group, families=("requires",), min_gap=1.0).bundles
    assert [i.args[0] for i in strict[0].items] == ["take pen 2 from desk 1", "put pen 2 in/on drawer 1"]
