"""``python -m agentenvs.searchqa baselines``: scripted agents play and report EM; bad flags exit with 2."""

from __future__ import annotations

import pytest

from agentenvs.searchqa.__main__ import main, parse


def test_play_reports_each_agent_in_order(capsys):
    assert main(["baselines", "--episodes", "5", "--agents", "expert", "no-search"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("SearchQA-v0 dataset=generated tasks=") and lines[0].endswith("episodes=5")
    assert lines[1].strip().startswith("expert: EM 1.000") and lines[2].strip().startswith("no-search: EM")


def test_the_defaults_and_the_flags_spelt_with_hyphens():
    args = parse(["baselines"])
    assert (args.episodes, args.dataset, args.agents) == (100, "generated", ("no-search", "top-title", "expert"))
    assert parse(["baselines", "--data-path", "d", "--split", "test"]).data_path == "d"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["baselines", "--episodes", "0"], "--episodes must be >= 1, got 0"),
        (["baselines", "--agents", "oracle"], "oracle"),
        (["baselines", "--dataset", "trivia"], "trivia"),
        (["dance"], "dance"),
    ],
)
def test_a_bad_flag_exits_with_status_2_and_says_why(capsys, argv, says):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert says in captured.err + captured.out
