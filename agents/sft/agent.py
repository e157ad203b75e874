"""``SFTAgent``: behaviour cloning on the env's own expert, the warm start of an RL run.

``learn()`` plays the expert (:func:`~agents.sft.demonstrations.collect_demonstrations`) on
the training split, evaluates the model on held-out tasks (unless ``eval_before=False``), fits
it to the demonstrations (:class:`~agents.sft.trainer.SFTTrainer`), evaluates again and saves
the result: with LoRA the adapter alone in ``<output_dir>/adapter`` (peft's format, a few MB; the
merged model too, in ``model/``, with ``save_merged_model``), without LoRA the whole model in
``model/``.
An RL run starts from it with ``GRPOAgent(model=<output_dir>)``: the adapter is merged into its
base once (:func:`agents.policy.models.merged_model`, cached outside the run folder), a new LoRA
adapter then trains on top of the merged weights, and the reference model (adapter off) is the
warm-started model, not the original one.

Files in ``output_dir``: ``config.json`` (``kind: "sft"``, model, env, config),
``metrics.jsonl`` (one record per optimizer step; ``eval/*`` before, if evaluated, and after),
``demonstrations.jsonl`` (the turns trained on: the expert's, its ``extra_expert_turns``, then ``demonstrations_path``'s),
``checkpoints/`` (one per epoch, for ``resume``), ``trajectories/`` (the evaluation episodes), and
``adapter/`` or ``model/`` (or both).

Example:
    >>> agent = SFTAgent("tiny-random-qwen3", "SearchQA-v0", SFTConfig(expert_episodes=4))  # doctest: +SKIP
    >>> agent.learn()["eval/success_rate"]                                                 # doctest: +SKIP
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

import agentenvs  # noqa: F401  (registers the envs)
from agents.collection.collector import Collector
from agents.collection.evaluation import evaluate_policy, format_evaluation
from agents.policy.models import ADAPTER_CONFIG, ADAPTER_FOLDER
from agents.policy.weights import torch_dtype
from agents.runs.checkpoint import latest_checkpoint, truncate_jsonl
from agents.runs.folders import with_run_folder
from agents.runs.lock import RunLock
from agents.runs.resume import check_resume, refuse_fresh_start
from agents.settings import OptimSettings, build_policy
from agents.sft.config import SFTConfig
from agents.sft.demonstrations import collect_demonstrations, collect_turns_of_kind, read_demonstrations
from agents.sft.trainer import SFTTrainer, tokenize_demonstrations, write_record
from agents.training.trainer import METRICS_FILE

MODEL_FOLDER = "model"
"""The subfolder of an SFT (or RL) run that holds a loadable Hugging Face model."""
SFT_RECORDS = (METRICS_FILE, "checkpoints", MODEL_FOLDER, ADAPTER_FOLDER)
"""What an SFT run writes that a fresh start into the same folder would destroy."""


class SFTAgent:
    """Behaviour cloning of ``env``'s expert into ``model`` (see the module docstring).

    Args:
        model: ``"smollm2-135m"``, ``"tiny-random-qwen3"``, a local model folder or a run folder.
        env: A registered env id.
        config: The run's settings (default ``SFTConfig()``).
    """

    def __init__(
        self, model: str | os.PathLike[str] = "smollm2-135m", env: str = "WebShop-v0", config: SFTConfig | None = None
    ) -> None:
        # output_dir=None: a new runs/sft-<env>-<n>
        self.config = with_run_folder(config or SFTConfig(), "sft", env)
        self.model_name = str(model)
        self.env_id = env
        config = self.config
        config.check_env(env)  # before the model loads: a misspelt env keyword fails in a second
        path = config.demonstrations_path
        self.file_demonstrations = [] if path is None else read_demonstrations(path)
        self.prompt_builder = config.prompt_builder()
        self.env_kwargs = config.env_kwargs_with_limit()
        self.eval_env_kwargs = config.evaluation_env_kwargs(env)
        self.policy = build_policy(model, config)  # samples only to evaluate (greedily)

    @property
    def output_dir(self) -> Path:
        """The run folder (``config.output_dir``, or the new one made when it was None)."""
        return Path(str(self.config.output_dir))

    def learn(self) -> dict[str, Any]:
        """Demonstrate, evaluate, fit, evaluate, save; returns the last record (``eval/*`` after).

        The run folder is locked meanwhile (:class:`~agents.runs.lock.RunLock`). A fresh start
        into a folder holding another run is refused; a resume needs the saved settings (but
        ``epochs``) unless ``resume_changed_config``.
        """
        config = self.config
        with RunLock(self.output_dir):
            print(f"{type(config).__name__}: this run writes to {self.output_dir}", flush=True)
            run = {"kind": "sft", "model": self.model_name, "env": self.env_id, "config": config.to_dict()}
            if not config.resume:
                refuse_fresh_start(self.output_dir, SFT_RECORDS, type(config).__name__)
            elif latest_checkpoint(self.output_dir) is not None:
                check_resume(self.output_dir, run, config)
            return self._learn(run)

    def _learn(self, run: dict[str, Any]) -> dict[str, Any]:
        config = self.config
        output = self.output_dir
        metrics_path = output / METRICS_FILE
        demonstrations, demo_stats = collect_demonstrations(
            self.env_id,
            episodes=config.expert_episodes,
            prompt_builder=self.prompt_builder,
            env_kwargs=self.env_kwargs,
            invalid_action_rate=config.invalid_action_rate,
            seed=config.seed,
        )
        extra_stats: dict[str, float] = {}
        for kind, count in config.extra_expert_turns.items():
            turns, stats = collect_turns_of_kind(
                self.env_id,
                kind,
                count=count,
                prompt_builder=self.prompt_builder,
                env_kwargs=self.env_kwargs,
                invalid_action_rate=config.invalid_action_rate,
                seed=config.seed,
            )
            demonstrations += turns
            extra_stats |= {
                f"demonstrations/{kind}_turns": float(count),
                f"demonstrations/{kind}_episodes": float(stats.episodes),
            }
        demonstrations += self.file_demonstrations
        stop = self.prompt_builder.stop_strings(self._action_format())
        examples = tokenize_demonstrations(self.policy, demonstrations, stop=stop)
        print(
            f"SFT: {demo_stats.episodes} expert episodes (expert success {demo_stats.success_rate:.2f}) gave "
            f"{demo_stats.demonstrations} turns to clone ({demo_stats.broken_turns} broken ones shown, not "
            f"trained on){self._extra_note()}{self._file_note()}; {config.epochs} epochs of {-(-len(examples) // config.batch_size)} steps",
            flush=True,
        )
        trainer = SFTTrainer(
            self.policy,
            examples,
            output_dir=output,
            epochs=config.epochs,
            batch_size=config.batch_size,
            optim=OptimSettings.of(config),
            seed=config.seed,
            progress=config.progress,
            trunk_cache=config.use_trunk_cache,
            checkpoint_state=run,
        )
        resumed = config.resume and trainer.resume()
        if resumed:
            truncate_jsonl(metrics_path, trainer.optimizer_steps)
            print(f"resumed SFT from epoch {trainer.epoch}", flush=True)
        else:
            metrics_path.unlink(missing_ok=True)
        (output / "config.json").write_text(json.dumps(run, indent=2))
        with open(output / "demonstrations.jsonl", "w", encoding="utf-8") as handle:
            for demonstration in demonstrations:
                handle.write(json.dumps(dataclasses.asdict(demonstration), ensure_ascii=False) + "\n")

        def log(record: dict[str, Any]) -> None:
            write_record(metrics_path, record)

        if not resumed:
            start = self.evaluate(step=0) if self.config.eval_before else {}
            if start:
                print(f"SFT: before cloning, held out: {format_evaluation(start)}", flush=True)
            log({"step": 0, **demo_stats.to_dict("demonstrations/"), **extra_stats, **start})
        trainer.train(log)
        final = {"step": trainer.optimizer_steps, **self.evaluate(step=trainer.optimizer_steps)}
        if len(final) > 1:
            print(f"SFT: after cloning, held out: {format_evaluation(final)}", flush=True)
            log(final)
        self.save()
        return final

    @property
    def saved_folder(self) -> Path:
        """Where :meth:`learn` saves what a later run starts from: ``adapter/`` with LoRA, else ``model/``."""
        return self.output_dir / (ADAPTER_FOLDER if self.policy.lora is not None else MODEL_FOLDER)

    def save(self) -> Path:
        """Saves what a later run starts from (see the module docstring); returns :attr:`saved_folder`.

        A ``model/`` that an earlier sitting of this run wrote is removed when only the adapter is
        saved now: the adapter replaces it (a run folder's ``model/`` would otherwise win).
        """
        model = self.output_dir / MODEL_FOLDER
        if self.policy.lora is None:
            self.save_pretrained(model)
            return self.saved_folder
        self.save_adapter(self.saved_folder)
        if self.config.save_merged_model:
            self.save_pretrained(model)
        else:
            shutil.rmtree(model, ignore_errors=True)
        return self.saved_folder

    def save_adapter(self, folder: str | os.PathLike[str]) -> None:
        """Saves the LoRA adapter (peft's format) and the tokenizer; the adapter names its base model as
        :func:`~agents.policy.models.resolve_model` takes it (a local path made absolute).

        Raises:
            ValueError: without LoRA.
        """
        if self.policy.lora is None:
            raise ValueError("SFTAgent.save_adapter: this run has no LoRA adapter (lora=False); use save_pretrained")
        folder = Path(folder)
        self.policy.model.save_pretrained(str(folder))
        self.policy.tokenizer.save_pretrained(str(folder))
        local = Path(self.model_name).expanduser()
        base = str(local.resolve()) if local.exists() else self.model_name
        settings = json.loads((folder / ADAPTER_CONFIG).read_text())
        (folder / ADAPTER_CONFIG).write_text(json.dumps({**settings, "base_model_name_or_path": base}, indent=2))

    def evaluate(self, episodes: int | None = None, *, step: int = 0) -> dict[str, float]:
        """Greedy held-out success, score, episode length and invalid-action rate ({} with 0 episodes)."""
        episodes = self.config.eval_episodes if episodes is None else episodes
        if episodes == 0:
            return {}
        collector = Collector(
            self.policy,
            self.env_id,
            num_groups=episodes,
            group_size=1,
            prompt_builder=self.prompt_builder,
            env_kwargs=self.eval_env_kwargs,
            progress=self.config.progress,
            description=f"evaluate ({episodes} held-out goals)",
        )
        try:
            return evaluate_policy(
                self.policy,
                collector,
                episodes=episodes,
                seed=self.config.seed,
                prefix="eval/",
                trajectories_path=self.output_dir / "trajectories" / f"eval_step_{step}.jsonl",
            )
        finally:
            collector.close()

    def save_pretrained(self, folder: str | os.PathLike[str]) -> None:
        """Saves a plain Hugging Face model (LoRA merged in) and the tokenizer.

        Written in the parameter dtype: a bf16 trunk (``trunk_dtype``) is cast back, so the saved
        trunk holds the rounded weights this run computed with.
        """
        model: Any = self.policy.model
        if self.policy.lora is not None:
            model = copy.deepcopy(model).merge_and_unload().to(torch_dtype(self.config.dtype))
        model.save_pretrained(str(folder))
        self.policy.tokenizer.save_pretrained(str(folder))

    def _extra_note(self) -> str:
        extra = self.config.extra_expert_turns
        return "".join(f", {count} more {kind!r} turns from further expert episodes" for kind, count in extra.items())

    def _file_note(self) -> str:
        count = len(self.file_demonstrations)
        return f", and {count} more from {self.config.demonstrations_path}" if count else ""

    def _action_format(self) -> str:
        import gymnasium as gym

        env = gym.make(self.env_id, **self.env_kwargs)
        try:
            return str(env.get_wrapper_attr("action_format"))
        finally:
            env.close()
