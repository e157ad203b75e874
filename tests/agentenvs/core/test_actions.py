"""The action-format registry: render and parse agree, within each format's stated limits."""

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.core import actions
from agentenvs.core.actions import ACTION_FORMATS, ActionFormat, get_action_format, render_action

FORMAT_NAMES = sorted(ACTION_FORMATS)
MAX_LENGTH = {"raw": 512, "think_action": 512, "think_action_strict": 512, "search_answer": 2048}
FORBIDDEN_TAGS = {
    "raw": (),
    "think_action": ("action", "think"),
    "think_action_strict": ("action", "think"),
    "search_answer": ("search", "answer", "think", "information"),
}


def stopped(action_format: ActionFormat, text: str) -> str:
    """``text`` as a generation that stops after the first stop string gives it (stop string kept)."""
    ends = [text.find(stop) + len(stop) for stop in action_format.stop_strings if stop in text]
    return text[: min(ends)] if ends else text


def carries(action_format: ActionFormat, action: str) -> bool:
    """Whether the rendered action parses back as itself, also when generation stops at a stop string."""
    rendered = action_format.render(action)
    parsed = [action_format.parse(text) for text in (rendered, stopped(action_format, rendered))]
    return all(result.valid and result.action == action for result in parsed)


def within_limits(name: str, action: str) -> bool:
    """What the module docstring of agentenvs.core.actions says each format can carry."""
    content = action
    if name == "search_answer":
        tags = [tag for tag in ("search", "answer") if action.startswith(f"<{tag}>") and action.endswith(f"</{tag}>")]
        if not tags:
            return False
        content = action[len(tags[0]) + 2 : -len(tags[0]) - 3]
    return (
        content != ""
        and content == content.strip()
        and len(content) <= MAX_LENGTH[name]
        and not (name == "raw" and "\n" in content)
        and not any(f"<{tag}>" in content or f"</{tag}>" in content for tag in FORBIDDEN_TAGS[name])
    )


PIECES = st.sampled_from(
    [
        *(f"<{tag}>" for tag in ("think", "action", "search", "answer", "information")),
        *(f"</{tag}>" for tag in ("think", "action", "search", "answer", "information")),
        "</action",
        "<",
        ">",
        "/",
        " ",
        "\n",
        "\r",
        "\t",
        "\u2028",
        "go to desk 1",
        "東京",
    ]
)
SOUP = st.lists(st.one_of(PIECES, st.text(max_size=6)), max_size=10).map("".join)
ACTIONS = st.one_of(
    SOUP,
    SOUP.map(lambda text: f"<search>{text}</search>"),
    SOUP.map(lambda text: f"<answer>{text}</answer>"),
    st.integers(500, 530).map(lambda n: "a" * n),
)
PLAIN = st.text(st.characters(blacklist_characters="<\n", blacklist_categories=("Cs",)), max_size=60).map(str.strip)


@settings(max_examples=400, deadline=None)
@given(action=ACTIONS)
def test_each_format_carries_exactly_the_actions_within_its_limits(action):
    for name, action_format in ACTION_FORMATS.items():
        assert carries(action_format, action) == within_limits(name, action), (name, action)


@settings(max_examples=200, deadline=None)
@given(text=PLAIN, tag=st.sampled_from(["search", "answer"]))
def test_plain_actions_round_trip_and_the_span_holds_exactly_the_action(text, tag):
    for name, action_format in ACTION_FORMATS.items():
        action = f"<{tag}>{text}</{tag}>" if name == "search_answer" else text
        rendered = action_format.render(action)
        parsed = action_format.parse(rendered)
        assert parsed.valid == bool(text), (name, action)
        if text:
            assert parsed.action == action and parsed.span.text_of(rendered) == action
            # a generation stopped at a stop string reads the same, and it stops right after the
            # action (a raw action: at the newline that ends its line)
            assert action_format.parse(stopped(action_format, rendered)) == parsed
            assert stopped(action_format, rendered + "\nmore text") in (rendered, rendered + "\n")


@pytest.mark.parametrize("name", FORMAT_NAMES)
def test_the_length_limit_is_the_parsers(name):
    action_format = ACTION_FORMATS[name]
    for length in (MAX_LENGTH[name], MAX_LENGTH[name] + 1):
        action = "<answer>" + "a" * length + "</answer>" if name == "search_answer" else "a" * length
        assert carries(action_format, action) == (length == MAX_LENGTH[name])


def test_hand_cases_at_the_limits():
    raw, think, search = (ACTION_FORMATS[name] for name in ("raw", "think_action", "search_answer"))
    assert raw.parse(raw.render("go\nnorth")).action == "go\nnorth"  # the parser reads it, but...
    assert not carries(raw, "go\nnorth")  # ...generation stops at the newline
    assert not carries(think, "look</action>")
    assert carries(think, "look</action") and carries(think, "x <y> z")
    assert not carries(think, " look") and not carries(think, "")
    assert not carries(search, "Paris")  # SearchQA's actions are elements, written as they are
    assert not carries(search, "<answer>a <search>b</search></answer>")
    assert carries(search, "<answer>東京 🗼</answer>")


def test_the_strict_format_accepts_its_own_rendering():
    strict = get_action_format("think_action_strict")
    assert strict.render("look").startswith("<think></think>")
    assert strict.parse(strict.render("look")).valid
    assert not strict.parse("<action>look</action>").valid


def test_unknown_names_raise_naming_the_choices():
    for bad in ("xml", "", "RAW"):
        with pytest.raises(ValueError, match=repr(bad)) as raised:
            get_action_format(bad)
        assert all(name in str(raised.value) for name in ACTION_FORMATS)
    with pytest.raises(ValueError, match="action_format"):
        render_action("look", "json")
    with pytest.raises(TypeError):
        ACTION_FORMATS["mine"] = ACTION_FORMATS["raw"]  # type: ignore[index]  (the registry is read-only)


def test_records_are_complete_and_frozen():
    for name, action_format in ACTION_FORMATS.items():
        assert action_format.name == name and action_format.instruction and action_format.stop_strings
        assert all(stop for stop in action_format.stop_strings)
    with pytest.raises(AttributeError):
        ACTION_FORMATS["raw"].name = "other"  # type: ignore[misc]


def test_the_table_is_the_only_view_of_the_formats():
    """No second name for the table or its columns: every consumer reads ``ACTION_FORMATS``."""
    import importlib.util

    from wrappers import discrete, prompting

    for module, names in (
        (actions, ("PROJECTORS", "get_projector")),
        (prompting, ("FORMAT_INSTRUCTIONS", "STOP_STRINGS", "output_format_for", "PromptBuilder")),
        (discrete, ("format_action",)),
    ):
        assert not [name for name in names if hasattr(module, name) and name in getattr(module, "__all__", [name])]
    assert importlib.util.find_spec("agentenvs.core.projection") is None


@pytest.mark.parametrize("name", ["raw", "think_action", "think_action_strict"])
def test_an_env_reads_the_rendering_of_an_admissible_action(name):
    env = gym.make("WebShop-v0", num_products=100, split="all", action_format=name)
    _, info = env.reset(seed=0)
    action = info["admissible_actions"][0].replace("<query>", "green tea")
    _, _, _, _, info = env.step(render_action(action, name))
    assert info["action_valid"] and info["action"] == action
    env.close()


def test_searchqa_reads_the_rendering_of_its_experts_actions():
    env = gym.make("SearchQA-v0")
    env.reset(seed=0)
    done = False
    while not done:
        action = env.unwrapped.expert_action()
        _, _, terminated, truncated, info = env.step(render_action(action, "search_answer"))
        assert info["action_valid"] and info["action"] == action
        done = terminated or truncated
    assert info["won"]
    env.close()
