import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentenvs.core.trajectory import (
    ActionSpan,
    Trajectory,
    TrajectoryGroup,
    Turn,
    read_jsonl,
    to_json_value,
    write_jsonl,
)

spans = st.builds(
    lambda a, b, tok: ActionSpan(min(a, b), max(a, b), *(tok if tok else (None, None))),
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.one_of(st.none(), st.tuples(st.integers(0, 50), st.integers(50, 99))),
)
json_leaves = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.floats(allow_nan=False), st.text())
infos = st.dictionaries(
    st.text(max_size=10),
    st.recursive(
        json_leaves,
        lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
        max_leaves=8,
    ),
    max_size=5,
)
turns = st.builds(
    Turn,
    observation=st.text(),
    raw_output=st.text(),
    action=st.text(),
    action_span=st.one_of(st.none(), spans),
    reward=st.floats(allow_nan=False, allow_infinity=False),
    valid=st.booleans(),
    info=infos,
)


def trajectories(task_id="t", group_id=0):
    return st.builds(
        Trajectory,
        task_id=st.just(task_id),
        group_id=st.just(group_id),
        turns=st.lists(turns, max_size=4),
        success=st.booleans(),
        score=st.floats(allow_nan=False, allow_infinity=False),
        task=st.text(),
        initial_observation=st.text(),
        final_observation=st.text(),
        metadata=infos,
    )


@settings(max_examples=60, deadline=None)
@given(groups=st.lists(st.lists(trajectories("task-é", 3), max_size=3), max_size=3))
def test_jsonl_round_trip_is_lossless(tmp_path_factory, groups):
    path = tmp_path_factory.mktemp("rt") / "groups.jsonl"
    records = [TrajectoryGroup("task-é", 3, trajectories) for trajectories in groups]
    assert write_jsonl(path, records) == len(records)
    assert read_jsonl(path) == records


def test_mixed_records_and_numpy_values(tmp_path):
    turn = Turn(
        "obs",
        "<action>go</action>",
        "go",
        ActionSpan(8, 10, 2, 3),
        np.float32(0.5),
        np.bool_(True),
        {"count": np.int64(3), "scores": np.array([1.5, 2.0]), "pair": (1, "a")},
    )
    trajectory = Trajectory("t1", 0, [turn], success=True, score=1.0)
    path = tmp_path / "mixed.jsonl"
    write_jsonl(path, [trajectory, TrajectoryGroup("t1", 0, [trajectory])])
    loaded_trajectory, loaded_group = read_jsonl(path)
    assert loaded_trajectory.turns[0].info == {"count": 3, "scores": [1.5, 2.0], "pair": [1, "a"]}
    assert loaded_trajectory.turns[0].action_span == ActionSpan(8, 10, 2, 3)
    assert isinstance(loaded_group, TrajectoryGroup) and loaded_group.trajectories[0] == loaded_trajectory


def test_span_validation_and_helpers():
    with pytest.raises(ValueError, match="start"):
        ActionSpan(5, 2)
    with pytest.raises(ValueError, match="together"):
        ActionSpan(0, 1, token_start=1)
    span = ActionSpan(3, 5).with_tokens(1, 2)
    assert span == ActionSpan(3, 5, 1, 2)
    assert span.text_of("go north") == "no"


def test_group_rejects_foreign_trajectories():
    with pytest.raises(ValueError, match="task_id"):
        TrajectoryGroup("a", 0, [Trajectory("b", 0, [], False, 0.0)])
    with pytest.raises(ValueError, match="group_id"):
        TrajectoryGroup("a", 0, [Trajectory("a", 1, [], False, 0.0)])
    group = TrajectoryGroup("a", 0, [Trajectory("a", 0, [], True, 1.0), Trajectory("a", 0, [], False, 0.0)])
    assert group.success_rate == 0.5 and len(group) == 2


def test_unserialisable_info_is_named(tmp_path):
    with pytest.raises(TypeError, match="object"):
        to_json_value({"x": object()})
    (tmp_path / "bad.jsonl").write_text('{"task_id": \n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        read_jsonl(tmp_path / "bad.jsonl")


def test_reward_and_initial_privileged_are_typed_and_round_trip():
    from agentenvs.core.trajectory import Trajectory

    plain = Trajectory("t", 0, [], False, score=0.5)
    assert plain.reward == 0.5 and plain.initial_privileged is None  # no shaping: reward is the score
    shaped = Trajectory("t", 0, [], False, score=0.5, reward=0.3, initial_privileged={"gold_answers": ["x"]})
    again = Trajectory.from_dict(shaped.to_dict())
    assert (again.reward, again.initial_privileged) == (0.3, {"gold_answers": ["x"]})
    legacy = plain.to_dict()
    del legacy["reward"], legacy["initial_privileged"]  # a record written before these fields existed
    assert Trajectory.from_dict(legacy).reward == 0.5
