import dataclasses

import pytest

from agents.algorithms.orsd import ORSDOptions
from agents.algorithms.privileged.options import PrivilegedOptions, options_from_dict
from agents.algorithms.taspo import TASPOOptions


def test_both_rules_share_the_privileged_fields():
    shared = {field.name for field in dataclasses.fields(PrivilegedOptions)}
    assert shared == {
        "endpoint_url",
        "endpoint_model",
        "endpoint_api_key_env",
        "placement",
        "rescore_without_pi",
        "reuse_prompt_cache",
        "lm_max_new_tokens",
        "log_examples",
        "env_pi",
        "env_pi_keys",
        "env_pi_max_chars",
        "success_score",
    }
    for cls in (ORSDOptions, TASPOOptions):
        assert shared <= {field.name for field in dataclasses.fields(cls)}
        assert issubclass(cls, PrivilegedOptions)


@pytest.mark.parametrize(
    ("cls", "field", "value"),
    [
        (ORSDOptions, "placement", "middle"),
        (TASPOOptions, "placement", "middle"),
        (ORSDOptions, "lm_max_new_tokens", 0),
        (TASPOOptions, "log_examples", -1),
        (ORSDOptions, "rescore_without_pi", 1),
        (TASPOOptions, "lm_max_new_tokens", True),
        (ORSDOptions, "env_pi", "only"),
        (TASPOOptions, "env_pi_keys", ""),
        (ORSDOptions, "success_score", "high"),
        (TASPOOptions, "success_score", True),
        (ORSDOptions, "env_pi_max_chars", 0),
    ],
)
def test_shared_fields_are_checked_once_for_both_rules(cls, field, value):
    with pytest.raises(ValueError, match=f"{cls.__name__}.{field} must be"):
        cls(**{field: value})


def test_env_pi_keys_come_as_a_list_or_a_comma_separated_string():
    assert TASPOOptions(env_pi_keys="expert_plan, goal_facts").env_pi_keys == ("expert_plan", "goal_facts")
    assert ORSDOptions(env_pi_keys=["gold_answers"]).env_pi_keys == ("gold_answers",)
    assert ORSDOptions().env_pi == "none"  # the papers' behaviour by default


def test_the_endpoint_is_checked_only_where_a_component_uses_it():
    assert ORSDOptions(endpoint_url="not a url").endpoint_users == ()  # unused: not checked
    with pytest.raises(ValueError, match="ORSDOptions.endpoint_url / endpoint_model .* proposer and verifier"):
        ORSDOptions(proposer="endpoint", verifier="endpoint", endpoint_url="ftp://x", endpoint_model="m")
    with pytest.raises(ValueError, match="TASPOOptions.endpoint_url / endpoint_model .* analyzer.*model"):
        TASPOOptions(analyzer="endpoint", endpoint_url="http://localhost:1/v1")
    client = TASPOOptions(analyzer="endpoint", endpoint_url="http://localhost:1/v1", endpoint_model="m").endpoint()
    assert (client.base_url, client.model) == ("http://localhost:1/v1", "m")


def test_options_from_dict():

    assert options_from_dict(TASPOOptions, {"kappa": 0.1}, "taspo").kappa == 0.1
    with pytest.raises(ValueError, match=r"unknown taspo credit option\(s\) \['kapa'\]"):
        options_from_dict(TASPOOptions, {"kapa": 0.1}, "taspo")


def test_success_score_counts_high_scores_as_successes_and_relabels_groups():
    from agentenvs.core.trajectory import TrajectoryGroup
    from tests.support.privileged import make_trajectory

    won = make_trajectory("t", [("o", "a")], True)
    near = dataclasses.replace(make_trajectory("t", [("o", "b")], False), score=0.8)
    far = dataclasses.replace(make_trajectory("t", [("o", "c")], False), score=0.2)
    group = TrajectoryGroup("toy", 0, [won, near, far])
    papers = TASPOOptions()
    assert [papers.succeeded(t) for t in group.trajectories] == [True, False, False]
    assert papers.labelled(group) is group
    partial = ORSDOptions(success_score=0.75)
    assert [partial.succeeded(t) for t in group.trajectories] == [True, True, False]
    relabelled = partial.labelled(group)
    assert [t.success for t in relabelled.trajectories] == [True, True, False]
    assert [t.success for t in group.trajectories] == [True, False, False]  # the batch's own are untouched
