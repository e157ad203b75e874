"""The command line: typed dataclass arguments parsed by tyro (``python -m agents --help``).

Example:
    >>> args = parse(["train", "--total-steps", "3", "--config.group-size", "2"])
    >>> type(args).__name__, args.total_steps, args.config.group_size
    ('TrainArgs', 3, 2)
    >>> parse(["quickstart", "--preset", "searchqa"]).preset
    'searchqa'
    >>> parse(["sft", "--config.epochs", "3"]).config.epochs
    3
    >>> parse(["view", "runs/a", "runs/b", "--port", "8001"]).runs
    ('runs/a', 'runs/b')
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# Imported at module load, not lazily: tyro scans ``builtins`` when first imported and
# fails if ``builtins._`` then holds an unhashable tuple (as doctest runs leave it).
import tyro

from agents.cli.commands import DESCRIPTION, PROG
from agents.config import GRPOConfig
from agents.recipes import smoke_settings
from agents.sft.config import SFTConfig


@dataclass
class TrainArgs:
    """Train an LLM agent on an env."""

    model: str = "smollm2-135m"
    """Built-in model name (smollm2-135m, tiny-random-qwen3) or a local Hugging Face model folder."""
    env: str = "SearchQA-v0"
    """A registered env id."""
    total_steps: int = 20
    """Training steps (each collects num_groups x group_size episodes)."""
    recipe: bool = False
    """Start from the env's recipe (GRPOConfig.for_env, agents.recipes: the settings that train on 2 CPU
    cores in minutes) instead of GRPOConfig's generic defaults; --config flags still apply on top."""
    smoke: bool = False
    """A run of seconds through every stage (agents.recipes.SMOKE: 2 tasks, 2 turns of 8 tokens, one step)
    to check a set-up; it learns nothing; other flags still apply on top."""
    config: GRPOConfig = field(default_factory=GRPOConfig)
    """Algorithm, collection, evaluation and logging settings."""


@dataclass
class EvalArgs:
    """Evaluate a model, or a training run's latest checkpoint, on held-out tasks."""

    model: str = "smollm2-135m"
    """Built-in model name or local model folder (ignored with --run)."""
    env: str = "SearchQA-v0"
    """A registered env id (ignored with --run)."""
    run: str | None = None
    """A training run's output folder: evaluate its latest checkpoint with its own settings."""
    episodes: int = 32
    """Held-out tasks to play."""
    recipe: bool = False
    """Start from the env's recipe (GRPOConfig.for_env, agents.recipes: the settings that train on 2 CPU
    cores in minutes) instead of GRPOConfig's generic defaults; --config flags still apply on top."""
    smoke: bool = False
    """An evaluation of seconds (agents.recipes.SMOKE: 2 tasks, 2 turns of 8 tokens) to check a set-up;
    other flags still apply on top."""
    config: GRPOConfig = field(default_factory=GRPOConfig)
    """Settings (prompting, decoding, env kwargs) when no --run is given."""
    endpoint: str | None = None
    """An OpenAI-compatible server's API root (e.g. http://127.0.0.1:8000/v1): play --model as it serves it."""
    api_key_env: str = "OPENAI_API_KEY"
    """With --endpoint: the environment variable holding the API key (unset: "EMPTY", as local servers take)."""
    timeout_s: float = 60.0
    """With --endpoint: seconds one request may take, each try."""
    max_retries: int = 2
    """With --endpoint: retries of a failed request (connection errors, 408/409/429, 5xx)."""
    concurrency: int = 8
    """With --endpoint: requests in flight at once."""


@dataclass
class SFTArgs:
    """Behaviour cloning on an env's own expert (the warm start of an RL run)."""

    model: str = "smollm2-135m"
    """Built-in model name or a local Hugging Face model folder."""
    env: str = "WebShop-v0"
    """A registered env id."""
    recipe: bool = False
    """Start from the env's recipe (SFTConfig.for_env, agents.recipes: the settings that train on 2 CPU
    cores in minutes) instead of SFTConfig's generic defaults; --config flags still apply on top."""
    smoke: bool = False
    """A run of seconds through every stage (agents.recipes.SMOKE: 2 tasks, 2 turns of 8 tokens, one epoch on 2 expert episodes)
    to check a set-up; it learns nothing; other flags still apply on top."""
    config: SFTConfig = field(default_factory=SFTConfig)
    """Demonstrations, optimisation, evaluation and logging settings."""


@dataclass
class QuickstartArgs:
    """The README's main job: an expert warm start then RL on a multi-turn env (presets in agents.cli.quickstart)."""

    preset: Literal["webshop", "alfworld", "searchqa", "credit-lab"] = "webshop"
    """webshop (default), alfworld (the same warm start + GRPO on ALFWorld-v0), searchqa (one-turn GRPO),
    or credit-lab (GRPO and VinePPO raced on the credit lab's 4-turn Umbrella, curves with intervals)."""
    output_dir: str | None = None
    """Where the stages write (None: the preset's folder, e.g. runs/quickstart-webshop)."""
    resume: bool = False
    """Continue both stages from their latest checkpoints."""
    eval_episodes: int | None = None
    """Held-out goals per evaluation (None: the preset's 32); e.g. 128 for the wider evaluation
    that confirms the README's figures (training is the same: evaluating never changes what it samples)."""
    eval_start: bool = False
    """Also evaluate the bare model before the warm start (one more evaluation; a bare chat model
    plays WebShop's and ALFWorld's turns invalid, so the presets skip it)."""


@dataclass
class ViewArgs:
    """The credit viewer: a local web app over run folders (curves, steps, groups, per-token credit)."""

    runs: tyro.conf.Positional[tuple[str, ...]] = ()
    """Run folders (a training run's output_dir; several are overlaid for comparison); none: every run
    folder under runs/ (each folder there that holds a metrics.jsonl)."""
    port: int = 5000
    """Port to serve on."""
    host: str = "127.0.0.1"
    """Address to serve on (the default is reachable from this machine only)."""


Command = TrainArgs | EvalArgs | SFTArgs | QuickstartArgs | ViewArgs
COMMANDS: dict[str, Command] = {
    "train": TrainArgs(),
    "eval": EvalArgs(),
    "sft": SFTArgs(),
    "quickstart": QuickstartArgs(),
    "view": ViewArgs(),
}


def parse(argv: Sequence[str]) -> Command:
    """Parses ``<command> [flags]``; ``--help`` lists the commands, a bad command or flag exits with status 2.

    With ``--recipe`` or ``--smoke`` the flags are read again over those settings, so a flag given
    beside them still wins.

    >>> parse(["train", "--config.learning-rate", "0.5"]).config.learning_rate
    0.5
    >>> args = parse(["train", "--env", "WebShop-v0", "--recipe", "--smoke", "--config.group-size", "3"])
    >>> args.config.max_new_tokens, args.config.num_groups, args.config.group_size, args.total_steps
    (8, 2, 3, 1)
    """
    commands: dict[str, Callable[..., Any]] = {name: type(default) for name, default in COMMANDS.items()}
    args = _parse(argv, commands)
    if not isinstance(args, TrainArgs | EvalArgs | SFTArgs) or not (args.recipe or args.smoke):
        return args
    try:
        start = starting_point(args)
    except ValueError as error:  # an env without a recipe: say so as a bad flag is said
        print(f"python -m agents {argv[0]}: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    return typing.cast(Command, tyro.cli(type(args), default=start, args=list(argv[1:]), prog=f"{PROG} {argv[0]}"))


def _parse(argv: Sequence[str], commands: dict[str, Callable[..., Any]]) -> Command:
    return typing.cast(
        Command,
        tyro.extras.subcommand_cli_from_dict(
            commands,
            prog=PROG,
            description=DESCRIPTION,
            args=list(argv),
        ),
    )


def starting_point(args: TrainArgs | EvalArgs | SFTArgs) -> TrainArgs | EvalArgs | SFTArgs:
    """The command's defaults that ``--recipe`` and ``--smoke`` ask for, for ``args``' model and env.

    Raises:
        ValueError: ``--recipe`` for an env without a recipe.
    """
    if isinstance(args, SFTArgs):
        sft = SFTConfig.for_env(args.env) if args.recipe else SFTConfig()
        sft = dataclasses.replace(sft, **smoke_settings("sft")) if args.smoke else sft
        return SFTArgs(model=args.model, env=args.env, recipe=args.recipe, smoke=args.smoke, config=sft)
    rl = GRPOConfig.for_env(args.env) if args.recipe else GRPOConfig()
    rl = dataclasses.replace(rl, **smoke_settings("rl")) if args.smoke else rl
    if isinstance(args, EvalArgs):
        episodes = 2 if args.smoke else EvalArgs.episodes
        return EvalArgs(
            model=args.model, env=args.env, episodes=episodes, recipe=args.recipe, smoke=args.smoke, config=rl
        )
    steps = 1 if args.smoke else TrainArgs.total_steps
    return TrainArgs(model=args.model, env=args.env, total_steps=steps, recipe=args.recipe, smoke=args.smoke, config=rl)


def run_train(args: TrainArgs) -> dict[str, float]:
    """Trains, prints held-out success before and after, writes the learning curve."""
    from agents.agent import GRPOAgent
    from agents.reports.plotting import read_metrics
    from agents.runs.folders import folder_size
    from agents.training.trainer import METRICS_FILE

    agent = GRPOAgent(model=args.model, env=args.env, config=args.config)
    try:
        record = agent.learn(args.total_steps)
    finally:
        agent.close()
    records = read_metrics(agent.output_dir / METRICS_FILE)
    evaluations = [r for r in records if "eval/success_rate" in r]
    if evaluations:
        first, last = evaluations[0], evaluations[-1]
        print(
            f"held-out success: {first['eval/success_rate']:.3f} (step {first['step']}) -> "
            f"{last['eval/success_rate']:.3f} (step {last['step']}); score "
            f"{first['eval/mean_score']:.3f} -> {last['eval/mean_score']:.3f}; invalid-action rate "
            f"{first['eval/invalid_rate']:.3f} -> {last['eval/invalid_rate']:.3f}"
        )
    steps = [r for r in records if "train/invalid_rate" in r]
    if steps:
        print(
            f"training rollouts (sampled): invalid-action rate {steps[0]['train/invalid_rate']:.3f} -> "
            f"{steps[-1]['train/invalid_rate']:.3f}, reward {steps[0]['train/mean_reward']:.3f} -> "
            f"{steps[-1]['train/mean_reward']:.3f}, success {steps[0]['train/success_rate']:.3f} -> "
            f"{steps[-1]['train/success_rate']:.3f}"
        )
    print(f"metrics: {agent.output_dir / METRICS_FILE}; curve: {agent.output_dir / 'learning_curve.png'}")
    print(f"run folder: {agent.output_dir} ({folder_size(agent.output_dir)})")
    return record


def run_eval(args: EvalArgs) -> dict[str, float]:
    """Evaluates and prints the metrics."""
    from agents.agent import build_policy
    from agents.runs.checkpoint import load_checkpoint
    from agents.training.trainer import Trainer

    if args.endpoint is not None:
        return run_endpoint_eval(args)
    model, env, config = args.model, args.env, args.config
    weights = None
    if args.run is not None and args.recipe:
        raise ValueError("EvalArgs: --recipe and --run cannot be combined (a run is evaluated with its own settings)")
    if args.run is not None:
        _, weights, state = load_checkpoint(args.run)
        model, env = state["model"], state["env"]
        config = GRPOConfig.from_dict({**state["config"], "resume": False, "output_dir": args.run})
    config = dataclasses.replace(config, tensorboard=False)
    policy = build_policy(model, config)
    if weights is not None:
        policy.load_trainable_state_dict(weights)
    trainer = Trainer(policy, env, config, model_name=model)
    try:
        metrics = trainer.evaluate(args.episodes)
    finally:
        trainer.close()
    for key, value in metrics.items():
        print(f"{key}: {value:.4g}")
    return metrics


def run_endpoint_eval(args: EvalArgs) -> dict[str, float]:
    """Evaluates a served model (``--endpoint``) with the same prompts, projection and tasks as a local one."""
    import os

    from agents.collection.collector import Collector
    from agents.collection.evaluation import evaluate_policy
    from agents.policy.openai_policy import OpenAIPolicy, PolicyServerError

    config, endpoint = args.config, str(args.endpoint)
    if args.run is not None:
        raise ValueError("EvalArgs: --endpoint and --run cannot be combined (a run's checkpoint is a local model)")
    if config.rollout_mode != "per_turn":
        raise ValueError("EvalArgs: --endpoint plays per-turn prompts; --config.rollout-mode must be per_turn")
    if config.response_prefix:
        raise ValueError("EvalArgs: --endpoint cannot start responses with --config.response-prefix")
    policy = OpenAIPolicy(
        endpoint,
        args.model,
        api_key=os.environ.get(args.api_key_env),
        temperature=config.temperature,
        top_p=config.top_p,
        max_new_tokens=config.max_new_tokens,
        system_prompt=config.system_prompt,
        timeout_s=args.timeout_s,
        max_retries=args.max_retries,
        concurrency=args.concurrency,
        seed=config.seed,
    )
    try:
        policy.check_server()  # before the envs are built (an ALFWorld pool takes minutes)
    except PolicyServerError:
        policy.close()
        raise
    env_kwargs = config.evaluation_env_kwargs(args.env)
    collector = Collector(
        policy,
        args.env,
        num_groups=args.episodes,
        group_size=1,
        prompt_builder=config.prompt_builder(),
        invalid_action_penalty=config.invalid_action_penalty,
        env_kwargs=env_kwargs,
        progress=config.progress,
    )
    try:
        metrics = evaluate_policy(
            policy, collector, episodes=args.episodes, seed=config.seed, greedy=config.eval_greedy, prefix="eval/"
        )
    finally:
        collector.close()
        policy.close()
    for key, value in metrics.items():
        print(f"{key}: {value:.4g}")
    return metrics


def run_sft(args: SFTArgs) -> dict[str, float]:
    """Behaviour cloning; prints held-out figures before and after and where the model is."""
    from agents.runs.folders import folder_size
    from agents.sft import SFTAgent

    agent = SFTAgent(args.model, args.env, args.config)
    record = agent.learn()
    print(f"saved: {agent.saved_folder} (train on from it with --model {agent.output_dir})")
    print(f"run folder: {agent.output_dir} ({folder_size(agent.output_dir)})")
    for key, value in record.items():
        print(f"{key}: {value:.4g}")
    return record


def run_quickstart(args: QuickstartArgs) -> dict[str, object]:
    """Runs a preset of :mod:`agents.cli.quickstart`."""
    from agents.cli.quickstart import PRESETS
    from agents.cli.quickstart import run_quickstart as run_preset

    preset = PRESETS[args.preset]
    if args.output_dir is not None:
        preset = dataclasses.replace(preset, output_dir=args.output_dir)
    if args.eval_episodes is not None:
        preset = preset.with_eval_episodes(args.eval_episodes)
    if args.eval_start:
        preset = preset.with_start_evaluation()
    return run_preset(preset, resume=args.resume)


def run_view(args: ViewArgs) -> None:
    """Serves the viewer over the run folders until interrupted."""
    from agents.runs.folders import run_folders_under, runs_root
    from agents.viewer import serve

    runs = args.runs or tuple(str(path) for path in run_folders_under())
    if not runs:
        raise SystemExit(
            f"python -m agents view: no run folders under {runs_root()}/ (none holds a metrics.jsonl); "
            "give one or more run folders (RUN_DIR [RUN_DIR ...])"
        )
    try:
        serve(runs, host=args.host, port=args.port)
    except ValueError as error:
        raise SystemExit(f"python -m agents view: {error}") from None


def main(argv: Sequence[str] | None = None) -> int:
    from agents.policy.openai_policy import PolicyServerError

    args = parse(sys.argv[1:] if argv is None else argv)
    if isinstance(args, ViewArgs):
        run_view(args)
    elif isinstance(args, EvalArgs):
        try:
            run_eval(args)
        except (PolicyServerError, ValueError) as error:  # a bad server or setting: say so, no traceback
            print(f"error: {error}", file=sys.stderr)
            return 1
    elif isinstance(args, SFTArgs):
        run_sft(args)
    elif isinstance(args, QuickstartArgs):
        run_quickstart(args)
    else:
        run_train(args)
    return 0
