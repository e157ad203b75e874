import pytest

from agents.algorithms.taspo.alignment import align_guidance, render_guidance
from agents.algorithms.taspo.guidance import GuidanceItem
from tests.support.privileged import make_trajectory, make_turn, toy_group


def test_items_align_where_their_anchors_were_observed():
    lose_a = toy_group().trajectories[1]  # drawer first, desk (with pen 2 and mug 1) seen at turn 3
    desk = GuidanceItem("requirement", "desk", ("desk 1",))
    pen_drawer = GuidanceItem("requirement", "pen", ("pen 2", "drawer 1"))
    mug = GuidanceItem("requirement", "mug", ("mug 7",))
    aligned = align_guidance([desk, pen_drawer, mug], lose_a)
    assert aligned[0] == (desk,)  # the start observation names desk 1 and drawer 1, not pen 2
    assert aligned[3] == (pen_drawer, desk)  # pen 2 first observed at turn 3: most recent first
    assert all(mug not in turn for turn in aligned)
    any_match = align_guidance([pen_drawer], lose_a, match="any")
    assert any_match[0] == (pen_drawer,)
    with pytest.raises(ValueError, match="match"):
        align_guidance([desk], lose_a, match="most")


def test_invalid_turns_are_unaligned():
    trajectory = make_trajectory("t", [("desk 1 here", "go to desk 1")], False)
    trajectory.turns.append(make_turn("desk 1 here", "blah", valid=False))
    aligned = align_guidance([GuidanceItem("requirement", "desk", ("desk 1",))], trajectory)
    assert [len(turn) for turn in aligned] == [1, 0]


def test_render_guidance():
    items = [GuidanceItem("order", f"step {k}", ("a",), evidence=f"ev {k}") for k in range(3)]
    assert render_guidance([]) is None
    text = render_guidance(items, max_items=2, show_evidence=True)
    assert text.splitlines()[1:] == ["- step 0 (evidence: ev 0)", "- step 1 (evidence: ev 1)"]
