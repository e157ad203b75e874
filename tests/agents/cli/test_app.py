import json

import pytest

from agents.cli import EvalArgs, QuickstartArgs, SFTArgs, main, parse
from agents.cli.app import run_quickstart


def test_parse_names_the_commands_on_a_bad_one(capsys):
    for argv in ([], ["fly"]):
        with pytest.raises(SystemExit) as exit_info:
            parse(argv)
        assert exit_info.value.code == 2
        assert "train, eval, sft, quickstart, view" in capsys.readouterr().err.replace("\n", " ")
    with pytest.raises(SystemExit):
        parse(["train", "--config.group-size", "zero"])


@pytest.mark.parametrize("argv", [["--help"], ["train", "--help"], ["quickstart", "--help"], ["view", "--help"]])
def test_help_exits_0_listing_commands_or_flags(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse(argv)
    assert exit_info.value.code == 0
    shown = capsys.readouterr().out
    assert ("quickstart" in shown) if argv == ["--help"] else ("--" in shown)


def test_parse_fills_the_typed_arguments():
    args = parse(["eval", "--run", "runs/x", "--episodes", "4"])
    assert isinstance(args, EvalArgs) and (args.run, args.episodes) == ("runs/x", 4)
    quick = parse(["quickstart"])
    assert isinstance(quick, QuickstartArgs) and quick.preset == "webshop" and not quick.resume
    assert quick.eval_episodes is None and parse(["quickstart", "--eval-episodes", "128"]).eval_episodes == 128
    assert not quick.eval_start and parse(["quickstart", "--eval-start"]).eval_start
    with pytest.raises(SystemExit):
        parse(["quickstart", "--preset", "chess"])
    sft = parse(["sft", "--env", "ALFWorld-v0", "--config.expert-episodes", "5", "--config.invalid-action-rate", "0.2"])
    assert isinstance(sft, SFTArgs) and (sft.env, sft.config.expert_episodes, sft.config.invalid_action_rate) == (
        "ALFWorld-v0",
        5,
        0.2,
    )
    train = parse(["train", "--config.credit", "taspo", "--config.credit-options", "kappa", "0.1"])
    assert train.config.credit == "taspo" and train.config.credit_options == {"kappa": 0.1}


@pytest.mark.parametrize("argv", [["quickstart"], ["quickstart", "--eval-start", "--eval-episodes", "64"]])
def test_quickstart_runs_the_preset_its_flags_ask_for(monkeypatch, argv):
    import agents.cli.quickstart as quickstart

    ran = []
    monkeypatch.setattr(quickstart, "run_quickstart", lambda preset, resume: ran.append(preset) or {})
    run_quickstart(parse(argv))
    expected = quickstart.PRESETS["webshop"]
    if "--eval-start" in argv:
        expected = expected.with_eval_episodes(64).with_start_evaluation()
    assert ran == [expected] and ran[0].sft is not None and ran[0].sft.eval_before is ("--eval-start" in argv)


def test_train_then_eval_the_run(tmp_path, tiny_model_path, capsys):
    run = tmp_path / "run"
    code = main(
        [
            "train",
            "--model",
            str(tiny_model_path),
            "--total-steps",
            "1",
            "--config.num-groups",
            "1",
            "--config.group-size",
            "2",
            "--config.max-new-tokens",
            "4",
            "--config.eval-episodes",
            "1",
            "--config.env-kwargs",
            "max_turns",
            "1",
            "--config.output-dir",
            str(run),
            "--config.no-progress",
            "--config.no-tensorboard",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "held-out success:" in printed and "(step 0) ->" in printed and "(step 1)" in printed
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1] and "train/invalid_rate" in records[1]
    assert (run / "learning_curve.png").is_file()
    assert main(["eval", "--run", str(run), "--episodes", "1"]) == 0
    printed = capsys.readouterr().out
    assert "success_rate: " in printed and "invalid_rate: " in printed


def test_recipe_starts_from_the_envs_recipe_and_flags_beside_it_win():
    from agents import GRPOConfig
    from agents.sft import SFTConfig

    train = parse(["train", "--env", "WebShop-v0", "--recipe", "--config.learning-rate", "0.5"])
    assert train.config == GRPOConfig.for_env("WebShop-v0", learning_rate=0.5) and train.recipe
    sft = parse(["sft", "--env", "ALFWorld-v0", "--recipe"])
    assert sft.config == SFTConfig.for_env("ALFWorld-v0")
    assert parse(["train", "--env", "WebShop-v0"]).config == GRPOConfig()  # without it: the generic defaults


def test_smoke_is_the_smoke_budget_over_the_defaults_or_the_recipe():
    from agents import GRPOConfig
    from agents.recipes import SMOKE

    train = parse(["train", "--smoke"])
    assert train.total_steps == 1 and all(getattr(train.config, k) == v for k, v in SMOKE["rl"].items())
    assert train.config.learning_rate == GRPOConfig().learning_rate  # the generic default under the budget
    both = parse(["train", "--env", "WebShop-v0", "--recipe", "--smoke", "--total-steps", "3"])
    assert (both.total_steps, both.config.num_groups, both.config.learning_rate) == (3, 2, 1e-3)
    sft = parse(["sft", "--smoke", "--recipe", "--config.epochs", "2"])
    assert (sft.config.expert_episodes, sft.config.extra_expert_turns, sft.config.epochs) == (2, {}, 2)
    evaluation = parse(["eval", "--smoke"])
    assert evaluation.episodes == 2 and evaluation.config.max_turns == 2


def test_recipe_for_an_env_without_one_is_a_bad_flag(capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse(["train", "--env", "KeyDoor-v0", "--recipe"])
    assert exit_info.value.code == 2
    assert "no agent recipe for env 'KeyDoor-v0'" in capsys.readouterr().err
    assert main(["eval", "--run", "runs/x", "--recipe"]) == 1
    assert "--recipe and --run cannot be combined" in capsys.readouterr().err


def test_a_smoke_run_goes_through_every_stage(tmp_path, tiny_model_path, capsys):
    run = tmp_path / "run"
    argv = ["--model", str(tiny_model_path), "--smoke", "--config.no-progress", "--config.output-dir"]
    assert main(["train", "--env", "SearchQA-v0", *argv, str(run)]) == 0
    assert f"run folder: {run} (" in capsys.readouterr().out  # and its size
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1] and "train/invalid_rate" in records[1]
    assert any((run / "checkpoints").iterdir())
    assert main(["sft", "--env", "WebShop-v0", *argv, str(tmp_path / "sft")]) == 0
    out = capsys.readouterr().out
    assert "eval/success_rate" in out and f"saved: {tmp_path / 'sft' / 'adapter'} (train on from it with" in out


def test_the_command_table_is_the_clis_and_its_help_needs_no_training_stack():
    import subprocess
    import sys

    from agents.cli import app
    from agents.cli.commands import COMMANDS

    assert list(COMMANDS) == list(app.COMMANDS)
    for name, text in COMMANDS.items():
        assert " ".join((type(app.COMMANDS[name]).__doc__ or "").split()) == text, name
    code = (
        "import runpy, sys; sys.argv = ['agents', '--help']\n"
        "try: runpy.run_module('agents', run_name='__main__')\n"
        "except SystemExit as e: assert e.code == 0\n"
        "print(sorted(m for m in ('torch', 'transformers', 'tyro') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage: python -m agents [-h] {train,eval,sft,quickstart,view}" in done.stdout
    assert "quickstart  The README's main job" in done.stdout and done.stdout.strip().endswith("[]")
