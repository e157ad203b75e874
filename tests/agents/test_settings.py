"""Every field of every settings class rejects a bad value with an error naming it, before any model loads."""

import dataclasses
import math
import types
import typing

import pytest

import agentenvs  # noqa: F401  (registers the envs)
import agents
from agentenvs.core.checks import NON_EMPTY, Bounds, Checked
from agents import GRPOAgent, GRPOConfig
from agents.settings import EnvSettings, LoraSettings, OptimSettings, PromptSettings, RunSettings
from agents.sft import SFTAgent, SFTConfig


def settings_classes() -> list[type]:
    """Every concrete settings dataclass the packages define (``Checked`` subclasses, found transitively)."""
    assert agents.algorithms.CREDIT_RULES  # the rules' options classes are imported
    found, stack = [], [Checked]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            stack.append(sub)
            if dataclasses.is_dataclass(sub) and sub.__module__.split(".")[0] in ("agents", "agentenvs", "wrappers"):
                found.append(sub)
    return sorted(set(found), key=lambda c: c.__qualname__)


class Foreign:
    """A value of no type any field accepts, with a stable repr (test ids must match across pytest-xdist workers)."""

    def __repr__(self) -> str:
        return "Foreign()"


def bad_values(annotation) -> list:
    """Values that break a field's rule: a foreign type always, then by the annotation's type and metadata."""
    values: list = [Foreign()]
    bounds, non_empty = Bounds(), False
    if typing.get_origin(annotation) is typing.Annotated:
        annotation, *metadata = typing.get_args(annotation)
        bounds = next((m for m in metadata if isinstance(m, Bounds)), bounds)
        non_empty = NON_EMPTY in metadata
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [m for m in typing.get_args(annotation) if m is not type(None)]
        annotation = members[0] if len(members) == 1 else None
    if typing.get_origin(annotation) is typing.Literal:
        values.append("no-such-choice")
    elif annotation is bool:
        values += ["yes", 1]
    elif annotation in (int, float):
        values += ["3", True]
        if annotation is int:
            values.append(2.5)
        else:
            values += [math.nan, math.inf]
        if bounds.minimum is not None:
            values.append(bounds.minimum - 1 if bounds.min_inclusive else bounds.minimum)
        if bounds.maximum is not None:
            values.append(bounds.maximum + 1 if bounds.max_inclusive else bounds.maximum)
    elif annotation is str:
        values.append(3)
        if non_empty:
            values.append("")
    elif typing.get_origin(annotation) is dict:
        values += [["a", 1], {"key": [1, 2]}, {3: "value"}]
    elif typing.get_origin(annotation) is tuple:
        values += [(), ("",), (1,)]
    return values


CASES = [
    pytest.param(cls, field.name, value, id=f"{cls.__name__}.{field.name}={value!r}")
    for cls in settings_classes()
    for field in dataclasses.fields(cls)
    for value in bad_values(typing.get_type_hints(cls, include_extras=True)[field.name])
]


def test_the_settings_classes_are_all_found():
    names = {cls.__name__ for cls in settings_classes()}
    assert {"GRPOConfig", "SFTConfig", "PromptSettings", "EnvSettings", "OptimSettings", "LoraSettings"} <= names
    assert {"RunSettings", "GiGPOOptions", "ORSDOptions", "TASPOOptions", "PrivilegedOptions"} <= names
    assert len(CASES) > 400


@pytest.mark.parametrize(("cls", "name", "value"), CASES)
def test_a_bad_value_is_refused_naming_the_field(cls, name, value):
    with pytest.raises(ValueError, match=rf"^{cls.__name__}\.{name}\b"):
        cls(**{name: value})


@pytest.mark.parametrize("cls", [GRPOConfig, SFTConfig, PromptSettings, EnvSettings, OptimSettings, LoraSettings])
def test_defaults_pass_and_round_trip_through_json(cls):
    assert cls.from_dict(cls().to_dict()) == cls()


def test_groups_are_views_of_a_whole_config():
    config = GRPOConfig(history_length=5, max_turns=3, learning_rate=0.5, lora=True, seed=7)
    assert PromptSettings.of(config).history_length == 5 and EnvSettings.of(config).max_turns == 3
    assert OptimSettings.of(config).learning_rate == 0.5 and LoraSettings.of(config).lora
    assert RunSettings.of(config).seed == 7
    assert PromptSettings.of(SFTConfig(history_length=5)) == PromptSettings.of(config)


def test_numbers_are_normalised_once():
    config = GRPOConfig(learning_rate=1, temperature=2)
    assert isinstance(config.learning_rate, float) and isinstance(config.temperature, float)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"env_kwargs": {"topk": 1}}, r"GRPOConfig\.env_kwargs has 'topk', which SearchQA-v0 does not take"),
        ({"env_kwargs": {"reward": "bleu"}}, r"GRPOConfig\.env_kwargs\['reward'\] must be one of 'em', 'f1'"),
        ({"env_kwargs": {"top_k": 1.5}}, r"GRPOConfig\.env_kwargs\['top_k'\] must be an integer"),
        ({"eval_env_kwargs": {"splt": "test"}}, r"GRPOConfig\.eval_env_kwargs has 'splt'"),
    ],
)
def test_env_kwargs_are_checked_against_the_env_before_the_model_loads(monkeypatch, kwargs, message):
    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded before the env settings were checked")

    monkeypatch.setattr(agents.agent, "build_policy", no_model)
    with pytest.raises(ValueError, match=message):
        GRPOAgent("tiny-random-qwen3", "SearchQA-v0", GRPOConfig(**kwargs))


def test_sft_env_kwargs_and_env_id_are_checked_before_the_model_loads(monkeypatch):
    monkeypatch.setattr(agents.sft.agent, "build_policy", None)  # calling it would raise TypeError
    with pytest.raises(ValueError, match=r"SFTConfig\.env_kwargs has 'page_size', which WebShop-v0 does not take"):
        SFTAgent("tiny-random-qwen3", "WebShop-v0", SFTConfig(env_kwargs={"page_size": 3}))
    with pytest.raises(ValueError, match=r"SFTConfig\.eval_env_kwargs has 'splt', which WebShop-v0 does not take"):
        SFTAgent("tiny-random-qwen3", "WebShop-v0", SFTConfig(eval_env_kwargs={"splt": "eval"}))
    with pytest.raises(ValueError, match="env id 'WebShop-v9' is not registered"):
        SFTAgent("tiny-random-qwen3", "WebShop-v9", SFTConfig())


def declared_fields(cls: type) -> set[str]:
    """The fields ``cls``'s own source annotates (a ``DEFAULTS`` entry changes a default; it declares nothing)."""
    import ast
    import inspect
    import textwrap

    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    assert isinstance(body, ast.ClassDef)
    return {
        node.target.id
        for node in body.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id.islower()
    }


def declaring_classes(cls: type) -> dict[str, list[str]]:
    """Each field of ``cls`` -> the classes of its MRO whose source declares it."""
    mro = [base for base in cls.__mro__ if dataclasses.is_dataclass(base)]
    return {
        field.name: [base.__qualname__ for base in mro if field.name in declared_fields(base)]
        for field in dataclasses.fields(cls)
    }


@pytest.mark.parametrize("cls", settings_classes(), ids=lambda cls: cls.__qualname__)
def test_every_settings_field_is_declared_once(cls):
    twice = {name: owners for name, owners in declaring_classes(cls).items() if len(owners) != 1}
    assert not twice, f"declared more than once (or nowhere): {twice}"


def test_the_stages_share_their_groups_and_change_only_defaults():
    grpo, sft = declaring_classes(GRPOConfig), declaring_classes(SFTConfig)
    shared = {name for name in grpo.keys() & sft.keys()}
    assert {"learning_rate", "lr_scheduler_type", "seed", "lora", "output_dir"} <= shared
    assert {"max_new_tokens", "eval_episodes", "trunk_cache", "prompt_lookup_num_tokens"} <= shared
    assert all(grpo[name] == sft[name] for name in shared)  # the same group declares each
    assert grpo["learning_rate"] == ["OptimSettings"] and grpo["trunk_cache"] == ["LoraSettings"]
    assert (GRPOConfig().learning_rate, SFTConfig().learning_rate, OptimSettings().learning_rate) == (1e-6, 2e-4, 1e-5)
    assert (GRPOConfig().seed, SFTConfig().seed, SFTConfig().lora, GRPOConfig().lora) == (42, 0, True, False)


def test_a_default_for_no_field_is_refused_when_the_class_is_defined():
    from collections.abc import Mapping
    from typing import Any, ClassVar

    with pytest.raises(TypeError, match=r"Typo.DEFAULTS: 'learning_rat' is not a field"):

        @dataclasses.dataclass
        class Typo(OptimSettings):
            DEFAULTS: ClassVar[Mapping[str, Any]] = {"learning_rat": 1e-3}


def test_one_builder_maps_an_rl_and_an_sft_config_to_the_policys_groups(tiny_model_path, monkeypatch):
    import agents.policy
    from agents.agent import build_policy as build_rl_policy
    from agents.settings import build_policy

    built = []
    monkeypatch.setattr(agents.policy, "TransformersPolicy", lambda model, **groups: built.append(groups) or groups)
    rl = agents.GRPOConfig(
        temperature=0.6, top_p=0.9, max_new_tokens=7, system_prompt="s", response_prefix="<a>", beta=0.1, seed=3
    )
    build_rl_policy(tiny_model_path, rl, stop=("\n",))
    groups = built[-1]
    assert (groups["sampling"].temperature, groups["sampling"].top_p, groups["sampling"].max_new_tokens) == (
        0.6,
        0.9,
        7,
    )
    assert groups["sampling"].stop == ("\n",) and groups["weights"].reference and groups["seed"] == 3
    assert (groups["chat"].system_prompt, groups["chat"].response_prefix) == ("s", "<a>")
    assert groups["decoding"].decode == rl.decode
    sft = agents.SFTConfig(lora=True, lora_top_layers=2, max_new_tokens=5, prompt_lookup_num_tokens=0)
    build_policy(tiny_model_path, sft)
    groups = built[-1]
    assert groups["weights"].lora == sft.lora_options() and not groups["weights"].reference
    assert (groups["sampling"].temperature, groups["sampling"].max_new_tokens) == (1.0, 5)


CHECK_FUNCTIONS = {"require", "check_int", "check_float", "check_choice", "check_bool", "check_str", "check_value"}
CHECKED_TWICE_ON_PURPOSE = {
    "env_workers": "two relations in GRPOConfig.check_relations: the vectorization mode, then the count",
    "rollout_workers": "two relations in GRPOConfig.check_relations: the count, then the mode",
    "temperature": "OpenAIPolicy's takes 0 (a server's greedy decoding), the local sampler's does not",
}


def check_sites() -> dict[str, list[str]]:
    """Each settings field named by a hand-written check call in ``agents/``, with the calls' sites."""
    import ast
    from pathlib import Path

    fields = {f.name for config in (agents.GRPOConfig, agents.SFTConfig) for f in dataclasses.fields(config)}
    sites: dict[str, list[str]] = {}
    root = Path(agents.__file__).parent
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name not in CHECK_FUNCTIONS:
                continue
            for arg in node.args[:3]:
                if isinstance(arg, ast.Constant) and arg.value in fields:
                    sites.setdefault(arg.value, []).append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return sites


def test_every_setting_is_checked_by_hand_at_one_site_at_most():
    # Fields checked from their annotations (Settings.__post_init__) have no site here at all.
    sites = check_sites()
    twice = {name: where for name, where in sites.items() if len(where) > 1}
    assert set(twice) == set(CHECKED_TWICE_ON_PURPOSE), twice
    assert all(len(where) == 2 for where in twice.values()), twice
