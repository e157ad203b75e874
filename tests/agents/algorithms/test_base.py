"""The credit-rule registry, typed options and the token broadcast (hand-computed)."""

from dataclasses import dataclass

import pytest
import torch

from agents import GRPOConfig
from agents.algorithms.base import (
    CREDIT_RULES,
    CreditChoice,
    CreditContext,
    CreditResult,
    CreditRule,
    NoOptions,
    broadcast_to_tokens,
    make_credit_rule,
    register_credit_rule,
)
from agents.algorithms.gigpo import GiGPOCredit, GiGPOOptions
from agents.algorithms.grpo import GRPOCredit
from tests.support.rules import registered_rule


def test_broadcast_gives_each_token_its_trajectory_advantage():
    advantages = torch.tensor([0.5, -2.0])
    out = broadcast_to_tokens(advantages, torch.tensor([1, 0, 1]), torch.tensor([[1, 1, 0], [1, 0, 0], [0, 0, 0]]))
    assert out.tolist() == [[-2.0, -2.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]]


def test_registry_names_rules_and_refuses_a_second_class_under_a_taken_name():
    assert {"grpo", "rloo", "gigpo", "vine", "orsd", "taspo"} <= set(CREDIT_RULES)
    with pytest.raises(ValueError, match="credit='nope' is not a registered credit rule"):
        make_credit_rule("nope")

    class Other(CreditRule):
        def compute(self, batch, context):
            return CreditResult(torch.zeros(1))

    with pytest.raises(ValueError, match="credit rule 'grpo' is already registered"):
        register_credit_rule("grpo")(Other)


def test_a_rule_reads_its_typed_options_from_the_config():
    @dataclass(frozen=True)
    class Knobs:
        size: int = 2

    class Sized(CreditRule):
        options_type = Knobs

        def compute(self, batch, context):
            return CreditResult(torch.full((1,), float(self.opts.size)))

    with registered_rule("sized", Sized):
        rule = make_credit_rule("sized", GRPOConfig(credit="sized", credit_options={"size": 5}))
        assert rule.opts == Knobs(5) and make_credit_rule("sized").opts == Knobs(2)
        with pytest.raises(ValueError, match=r"unknown sized credit option\(s\) \['sise'\]; known: \['size'\]"):
            GRPOConfig(credit="sized", credit_options={"sise": 5})
    assert CreditChoice.parse("grpo", {}) == CreditChoice(GRPOCredit, NoOptions())
    assert CreditChoice.parse("gigpo", {"gamma": 0.5}).options == GiGPOOptions(gamma=0.5)


def test_a_config_parses_its_credit_once_and_again_only_when_it_changed(monkeypatch):
    calls = []
    parse = CreditChoice.parse.__func__

    def counted(cls, name, values):
        calls.append(name)
        return parse(cls, name, values)

    monkeypatch.setattr(CreditChoice, "parse", classmethod(counted))
    config = GRPOConfig(credit="gigpo", credit_options={"gamma": 0.5})
    assert config.credit_choice is config.credit_choice and calls == ["gigpo"]
    rule = config.credit_choice.build(config)
    assert isinstance(rule, GiGPOCredit) and rule.opts == GiGPOOptions(gamma=0.5) and calls == ["gigpo"]
    config.credit_options = {"gamma": 0.9}  # a changed field is parsed again, never served stale
    assert config.credit_choice.options == GiGPOOptions(gamma=0.9) and calls == ["gigpo", "gigpo"]
    deferred = GRPOConfig(credit_options={"coef": 0.1})  # options for the rule an agent class sets later
    assert calls == ["gigpo", "gigpo"]
    with pytest.raises(ValueError, match=r"unknown grpo credit option\(s\) \['coef'\]"):
        _ = deferred.credit_choice


def test_context_without_a_policy_says_the_rule_needs_one():
    with pytest.raises(RuntimeError, match="needs a policy"):
        CreditContext(config=GRPOConfig()).score(["p"], [[1]])
