from hypothesis import given, settings
from hypothesis import strategies as st

from agentenvs.core.parsers import (
    project_raw,
    project_search_answer,
    project_think_action,
    project_think_action_strict,
    sanitize_model_text,
)

TAG_SOUP = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "<think>",
                "</think>",
                "<action>",
                "</action>",
                "<search>",
                "</search>",
                "<answer>",
                "</answer>",
                "<information>",
                "<",
                ">",
                "/",
                " ",
                "\n",
            ]
        ),
        st.text(max_size=20),
    ),
    max_size=30,
).map("".join)


def _check_consistent(raw, projection):
    if projection.valid:
        assert projection.error is None
        assert projection.span is not None
        assert 0 <= projection.span.start <= projection.span.end <= len(raw)
    else:
        assert projection.action == "" and projection.span is None
        assert isinstance(projection.error, str) and projection.error


@settings(max_examples=300, deadline=None)
@given(raw=st.one_of(st.text(), TAG_SOUP))
def test_projectors_never_raise_and_are_consistent(raw):
    for project in (project_raw, project_think_action, project_think_action_strict, project_search_answer):
        _check_consistent(raw, project(raw))


@settings(max_examples=200, deadline=None)
@given(raw=TAG_SOUP)
def test_think_action_span_points_at_the_action(raw):
    projection = project_think_action(raw)
    if projection.valid:
        assert projection.span.text_of(raw) == projection.action
        assert projection.action == projection.action.strip()


@settings(max_examples=200, deadline=None)
@given(raw=TAG_SOUP)
def test_search_answer_span_covers_the_element(raw):
    projection = project_search_answer(raw)
    if projection.valid:
        element = projection.span.text_of(raw)
        tag = "search" if projection.action.startswith("<search>") else "answer"
        assert element.startswith(f"<{tag}>") and element.endswith(f"</{tag}>")
        assert projection.action == f"<{tag}>{element[len(tag) + 2 : -len(tag) - 3].strip()}</{tag}>"


def test_huge_and_unicode_inputs():
    huge = "<think>" + "x" * 2_000_000 + "</think><action>go to desk 1</action>"
    assert project_think_action(huge).action == "go to desk 1"
    assert project_search_answer("<answer>東京 🗼</answer>").action == "<answer>東京 🗼</answer>"
    assert not project_think_action("<action>" + "a" * 600 + "</action>").valid
    assert not project_raw("").valid
    assert not project_think_action(None).valid  # type: ignore[arg-type]


def test_think_action_hand_cases():
    raw = "<think>the mug is here</think>\n<action>  take mug 1 from desk 1 </action>"
    projection = project_think_action(raw)
    assert projection.valid and projection.action == "take mug 1 from desk 1"
    assert raw[projection.span.start : projection.span.end] == "take mug 1 from desk 1"
    assert (projection.span.start, projection.span.end) == (41, 63)  # 30 + "\n" + 8 + 2 spaces

    assert "No action" in project_think_action("just text").error
    assert "never closed" in project_think_action("<action>go").error
    assert "exactly one" in project_think_action("<action>a</action><action>b</action>").error
    assert "nested" in project_think_action("<action><action>a</action></action>").error
    assert "empty" in project_think_action("<action>   </action>").error
    assert project_think_action("<action>look</action>").valid
    assert not project_think_action("<action>look</action>", require_think=True).valid
    assert not project_think_action("<action>look</action><think>x</think>", require_think=True).valid
    assert project_think_action("<think>x</think><action>look</action>", require_think=True).valid
    assert not project_think_action_strict("<action>look</action>").valid
    assert project_think_action_strict("<think></think><action>look</action>").action == "look"


def test_search_answer_hand_cases():
    raw = "<think>need the capital</think> <search> capital of France </search>"
    projection = project_search_answer(raw)
    assert projection.action == "<search>capital of France</search>"
    assert (projection.span.start, projection.span.end) == (32, len(raw))  # 31 + " "

    first = project_search_answer("<answer>Paris</answer><search>more</search>")
    assert first.action == "<answer>Paris</answer>"
    assert project_search_answer("<search>a</search> then <answer>b</answer>").action == "<search>a</search>"
    assert not project_search_answer("<search></search>").valid
    assert not project_search_answer("<answer>a <search>b</search></answer>").valid
    assert "never closed" in project_search_answer("<search>unclosed").error
    assert "<search>" in project_search_answer("Paris").error


def test_raw_projection_strips():
    projection = project_raw("  go north \n")
    assert projection.action == "go north"
    assert (projection.span.start, projection.span.end) == (2, 10)


SURROGATE, NUL, REPLACEMENT = chr(0xD800), chr(0), chr(0xFFFD)


def test_sanitize_model_text_replaces_one_for_one():
    raw = f"go{SURROGATE}{chr(0xDFFF)} x{NUL}y \U0001f600 é"
    clean = sanitize_model_text(raw)
    assert clean == f"go{REPLACEMENT}{REPLACEMENT} x{REPLACEMENT}y \U0001f600 é"
    assert len(clean) == len(raw)
    clean.encode("utf-8")
    assert sanitize_model_text("plain text") == "plain text"


def test_terminal_control_sequences_do_not_reach_an_observation():
    import gymnasium as gym

    import agentenvs  # noqa: F401

    answer = "Paris\x1b[2J\x1b]0;owned\x07\x1b]8;;http://x\x1b\\\x9b31m\x7f\tend\r\n"
    clean = sanitize_model_text(answer)
    assert not any(ch in clean for ch in "\x1b\x07\x9b\x7f") and len(clean) == len(answer)
    assert clean.endswith("\tend\r\n")  # tab, carriage return and newline stay
    env = gym.make("SearchQA-v0")
    env.reset(seed=0)
    observation, *_, info = env.step(f"<answer>{answer}</answer>")
    assert "\x1b" not in observation and "\x1b" not in str(info)


UNSAFE_SOUP = st.lists(
    st.one_of(
        st.sampled_from([SURROGATE, chr(0xDFFF), chr(0xDBFF) + chr(0xDC00), NUL]), st.characters(exclude_categories=())
    ),
    max_size=60,
).map("".join)


@given(UNSAFE_SOUP)
@settings(max_examples=300, deadline=None)
def test_sanitized_text_always_encodes_and_keeps_offsets(raw):
    clean = sanitize_model_text(raw)
    clean.encode("utf-8")
    assert len(clean) == len(raw)
    assert all(a == b or b == REPLACEMENT for a, b in zip(raw, clean, strict=True))
