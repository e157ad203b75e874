"""The viewer's Flask app: runs → steps → groups → trajectories → turns, and held-out episodes.

Pages (every one a permalink; filters are query parameters):

- ``/``: the runs, with their model, env and rule, and their learning curves overlaid.
- ``/compare?run=A&run=B``: two or more runs' curves overlaid and the settings that differ.
- ``/curves.svg?run=A[&run=B...][&smoothing=0.6]``: the curves as SVG (:mod:`agents.reports.plotting`).
- ``/run/<run>[?page=N]``: settings, curves, the steps with their metrics (100 a page), the evaluations;
  ``/run/<run>/goto?step=N[&kind=eval]`` opens a step's groups (or its held-out episodes).
- ``/run/<run>/step/<step>[?outcome=success|failure&task=ID]``: each recorded group's
  trajectories side by side with outcome, score, R and advantage A_i.
- ``/run/<run>/step/<step>/trajectory/<i>``: every turn's observation, prompt and raw output,
  each response token coloured by its final advantage (or Δ, weight, log-prob), hover for
  its values; the PI text, rubric or anchor the rule recorded.
- ``/run/<run>/eval/<step>[?outcome=...&task=...]`` and ``.../eval/<step>/trajectory/<i>``:
  the held-out episodes of an evaluation.

Bad input gets a 4xx with a plain-text message, never a 500: an unknown run, step or
trajectory (404), a bad filter or smoothing value (400), a URL over :data:`MAX_URL_CHARS`
(414). A bad run file is shown as a bad file: its pages list which file (and line) is bad and
why (:mod:`agents.viewer.store` reads every file), and a page whose file has nothing readable
is a 422 saying so. A trajectory's tokens come :data:`TOKENS_PER_PAGE` to a page (``?page=N``).

Example:
    >>> import tempfile
    >>> client = create_app([tempfile.mkdtemp()]).test_client()
    >>> client.get("/").status_code, client.get("/run/nope").status_code
    (200, 404)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from flask import Flask, Response, abort, redirect, render_template, request, url_for
from werkzeug.exceptions import HTTPException, NotFound

from agents.reports.curves import RunCurves
from agents.reports.plotting import render_runs
from agents.viewer.heatmap import (
    CENTRES,
    LABELS,
    colour,
    readable,
    segments,
    text_colour,
    value_names,
    value_scales,
    with_shaping,
)
from agents.viewer.store import BadFile, FileProblem, NotRecorded, Run, RunStore, UnknownRun

MAX_URL_CHARS = 2048
MAX_TASK_CHARS = 200
MAX_COMPARED = 8
STEPS_PER_PAGE = 100
"""Rows of a run page's step table (a long run's table comes in pages, ``?page=N``)."""
TOKENS_PER_PAGE = 1000
"""Token spans of a trajectory page (a 200k-token trajectory comes in pages, ``?page=N``)."""
OUTCOMES = ("all", "success", "failure")
MAX_STEP_DIGITS = 9
SETTINGS_SHOWN = ("credit", "num_groups", "group_size", "learning_rate", "rollout_mode", "max_new_tokens", "lora")


def parse_number(text: str, name: str) -> int:
    """A step or index from the URL: ASCII digits, at most :data:`MAX_STEP_DIGITS` of them (else 400).

    ``int`` alone would read ``١`` or ``１`` and spend time on a 10,000-digit string.
    """
    if not (0 < len(text) <= MAX_STEP_DIGITS and text.isascii() and text.isdigit()):
        abort(400, f"{name} must be a whole number of at most {MAX_STEP_DIGITS} digits, got {text[:40]!r}.")
    return int(text)


def _outcome_filter() -> tuple[str, str]:
    outcome = request.args.get("outcome", "all")
    task = request.args.get("task", "")
    if outcome not in OUTCOMES:
        abort(400, f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome[:40]!r}.")
    if len(task) > MAX_TASK_CHARS:
        abort(400, f"task must be at most {MAX_TASK_CHARS} characters.")
    return outcome, task


def _kept(item: dict[str, Any], outcome: str, task: str) -> bool:
    if outcome != "all" and bool(item.get("success")) != (outcome == "success"):
        return False
    return not task or task in str(item.get("task_id", ""))


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def token_pages(turns: Sequence[dict[str, Any]], per_page: int = TOKENS_PER_PAGE) -> list[list[tuple[int, int, int]]]:
    """The pages of a trajectory: per page, ``(turn position, first token, end token)`` chunks of at most ``per_page`` tokens.

    A turn longer than a page is split over pages; a turn without tokens takes no room.

    >>> token_pages([{"token_offsets": [[0, 1]] * 3}, {"token_offsets": [[0, 1]] * 2}, {}], per_page=2)
    [[(0, 0, 2)], [(0, 2, 3), (1, 0, 1)], [(1, 1, 2), (2, 0, 0)]]
    """
    pages: list[list[tuple[int, int, int]]] = []
    current: list[tuple[int, int, int]] = []
    room = per_page
    for position, turn in enumerate(turns):
        count, start = len(turn.get("token_offsets", [])), 0
        while True:
            take = min(room, count - start)
            current.append((position, start, start + take))
            start, room = start + take, room - take
            if room == 0:
                pages.append(current)
                current, room = [], per_page
            if start >= count:
                break
    if current or not pages:
        pages.append(current)
    return pages


def _turn_view(
    turn: dict[str, Any], scales: dict[str, float], first: int = 0, end: int | None = None
) -> dict[str, Any]:
    """What the template needs of one recorded turn's tokens ``first`` to ``end``: their segments, values and colours."""
    values: dict[str, list[float]] = turn.get("values", {})
    names = value_names(scales)
    offsets = turn.get("token_offsets", [])
    end = len(offsets) if end is None else end
    tokens: list[dict[str, Any]] = []
    raw = str(turn.get("raw_output", ""))
    for segment in segments(raw, offsets, turn.get("action_span"), (first, end)):
        if segment.token is None:
            tokens.append({"segment": segment})
            continue
        token_values = {
            name: float(values[name][segment.token]) for name in names if segment.token < len(values.get(name, []))
        }
        ids = turn.get("token_ids", [])
        colours = {
            name: colour(value, scale=scales[name], centre=CENTRES.get(name, 0.0))
            for name, value in token_values.items()
        }
        tokens.append(
            {
                "segment": segment,
                "values": token_values,
                "id": ids[segment.token] if segment.token < len(ids) else None,
                "colours": colours,
                "text_colours": {name: text_colour(background) for name, background in colours.items()},
            }
        )
    advantages = values.get("advantage", [])
    info = turn.get("info", {})
    scalars = {k: v for k, v in info.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    texts = {k: v for k, v in info.items() if k not in scalars and v is not None}
    return {
        **turn,
        "tokens": tokens,
        "mean_advantage": _mean(advantages),
        "scalars": scalars,
        "texts": texts,
        "first_token": first,
        "end_token": end,
        "token_count": len(offsets),
    }


def shown_value(scales: dict[str, float]) -> str:
    """The value a trajectory page colours by at first: A − A_i where the rule changed any token's
    credit beyond the outcome advantage (the telling part), else the first of :func:`value_names`.

    >>> shown_value({"advantage": 1.0, "shaping": 0.25}), shown_value({"advantage": 1.0, "shaping": 0.0})
    ('shaping', 'advantage')
    """
    if scales.get("shaping", 0.0) > 0:
        return "shaping"
    names = value_names(scales)
    return names[0] if names else "advantage"


def anchor_peers(
    records: Sequence[dict[str, Any]], position: int, key: str = "anchor"
) -> dict[int, list[tuple[int, int, int]]]:
    """Per turn of ``records[position]`` with an ``info[key]`` (a step group), the other turns of its group sharing it.

    Returns ``{turn: [(record index, member, turn), ...]}`` over the step's records of the same group.

    >>> rows = [{"group": 0, "member": 0, "turns": [{"turn": 0, "info": {"anchor": 5}}]},
    ...         {"group": 0, "member": 1, "turns": [{"turn": 0, "info": {"anchor": 4}}, {"turn": 1, "info": {"anchor": 5}}]}]
    >>> anchor_peers(rows, 0)
    {0: [(1, 1, 1)]}
    """
    record = records[position]
    peers: dict[int, list[tuple[int, int, int]]] = {}
    for turn in record.get("turns", []):
        anchor = turn.get("info", {}).get(key)
        if anchor is None:
            continue
        peers[turn["turn"]] = [
            (index, int(other.get("member", 0)), other_turn["turn"])
            for index, other in enumerate(records)
            if other.get("group") == record.get("group")
            for other_turn in other.get("turns", [])
            if other_turn.get("info", {}).get(key) == anchor and (index, other_turn["turn"]) != (position, turn["turn"])
        ]
    return peers


def _plain_turn_view(turn: dict[str, Any]) -> dict[str, Any]:
    """A held-out turn (no tokens): its raw output with the action span marked."""
    raw = str(turn.get("raw_output", ""))
    span = turn.get("action_span")
    bounds = (span["start"], span["end"]) if isinstance(span, dict) else tuple(span) if span else None
    pieces = segments(raw, [], bounds)
    return {**turn, "pieces": pieces}


def create_app(folders: Sequence[str | os.PathLike[str]]) -> Flask:
    """The viewer over run folders (see the module docstring).

    Raises:
        ValueError: when there is no folder or one is missing (naming it).
    """
    store = RunStore(folders)
    app = Flask(__name__)
    app.extensions["run_store"] = store
    app.add_template_filter(readable, "readable")

    def run_or_404(name: str) -> Run:
        try:
            return store.get(name)
        except UnknownRun as error:
            abort(404, f"{error} This viewer serves: {', '.join(r.name for r in store.runs())}.")

    def chosen_runs() -> list[Run]:
        names = request.args.getlist("run") or [r.name for r in store.runs()[:MAX_COMPARED]]
        if len(names) > MAX_COMPARED:
            abort(400, f"at most {MAX_COMPARED} runs can be overlaid, got {len(names)}.")
        return [run_or_404(name) for name in names]

    @app.before_request
    def bounded_url() -> None:
        if len(request.full_path) > MAX_URL_CHARS:
            abort(414, f"The URL is longer than {MAX_URL_CHARS} characters.")

    @app.errorhandler(HTTPException)
    def plain_error(error: HTTPException) -> Response:
        message = error.description or error.name
        if error.code == 404 and message == NotFound.description:  # no route: say what there is
            message = f"No viewer page at {request.path[:100]!r}; the runs are listed at /."
        return Response(f"{error.code} {error.name}: {message}\n", status=error.code, mimetype="text/plain")

    @app.errorhandler(Exception)
    def unexpected(error: Exception) -> Response:  # a 5xx with a message, never a traceback page
        app.logger.exception("viewer error")
        return Response(
            f"500 Internal Server Error: {type(error).__name__}: {error}\n", status=500, mimetype="text/plain"
        )

    @app.errorhandler(NotRecorded)
    def not_recorded(error: NotRecorded) -> Response:
        return Response(f"404 Not Found: {error}\n", status=404, mimetype="text/plain")

    @app.errorhandler(BadFile)
    def bad_file(error: BadFile) -> Response:  # the file is there but holds nothing the page can show
        lines = "".join(f"- {problem}\n" for problem in error.problems)
        return Response(
            f"422 Unprocessable Content: a run file the page needs is bad:\n{lines}", status=422, mimetype="text/plain"
        )

    def loaded(run: Run) -> tuple[RunCurves, list[FileProblem]]:
        try:
            return run.load()
        except NotRecorded as error:  # one run's folder gone must not take the others' listing with it
            return RunCurves(run.name, run.folder), [FileProblem(str(run.folder), None, str(error))]

    @app.get("/")
    def index() -> str:
        runs = [(run, *loaded(run)) for run in store.runs()]
        return render_template("index.html", runs=runs, compare_names=[r.name for r in store.runs()[:MAX_COMPARED]])

    @app.get("/compare")
    def compare() -> str:
        runs = chosen_runs()
        if len(runs) < 2:
            abort(400, "compare needs two or more run= parameters.")
        settings = [run.settings().get("config", {}) for run in runs]  # checked: an object
        keys = sorted({key for s in settings for key in s})
        differing = [
            (key, [s.get(key) for s in settings]) for key in keys if len({repr(s.get(key)) for s in settings}) > 1
        ]
        return render_template("compare.html", runs=runs, differing=differing)

    @app.get("/curves.svg")
    def curves_svg() -> Response:
        runs = chosen_runs()
        try:
            smoothing = float(request.args.get("smoothing", "0.6"))
        except ValueError:
            abort(400, "smoothing must be a number in [0, 1).")
        if not 0 <= smoothing < 1:
            abort(400, "smoothing must be a number in [0, 1).")
        image = render_runs([loaded(run)[0] for run in runs], smoothing=smoothing, image_format="svg")
        return Response(image, mimetype="image/svg+xml")

    @app.get("/run/<name>")
    def run_page(name: str) -> str:
        run = run_or_404(name)
        curves, problems = run.load()
        recorded = set(run.recorded_steps())
        evaluated = run.evaluation_steps()
        rows = [r for r in curves.records if "train/mean_reward" in r or r.get("step") in recorded]
        pages = max(1, -(-len(rows) // STEPS_PER_PAGE))
        page = parse_number(request.args.get("page", "1"), "page")
        if not 1 <= page <= pages:
            abort(404, f"Run {run.name!r} has step pages 1 to {pages}, not {page}.")
        return render_template(
            "run.html",
            run=run,
            curves=curves,
            config=curves.settings.get("config", {}),
            shown=SETTINGS_SHOWN,
            rows=rows[(page - 1) * STEPS_PER_PAGE : page * STEPS_PER_PAGE],
            page=page,
            pages=pages,
            recorded=recorded,
            evaluated=evaluated,
            activity=curves.credit_activity_keys(),
            problems=problems,
        )

    @app.get("/run/<name>/goto")
    def goto_step(name: str) -> Any:
        run = run_or_404(name)
        step = parse_number(request.args.get("step", ""), "step")
        kind = request.args.get("kind", "credit")
        if kind not in ("credit", "eval"):
            abort(400, f"kind must be credit or eval, got {kind[:40]!r}.")
        page = "step_page" if kind == "credit" else "evaluation_page"
        return redirect(url_for(page, name=run.name, step_text=step))

    @app.get("/run/<name>/step/<step_text>")
    def step_page(name: str, step_text: str) -> str:
        run = run_or_404(name)
        step = parse_number(step_text, "step")
        outcome, task = _outcome_filter()
        loaded_step = run.step(step)
        records = loaded_step.records
        examples = run.credit_examples(step)
        groups: dict[int, list[tuple[int, dict[str, Any], float | None]]] = {}
        for index, record in enumerate(records):
            if _kept(record, outcome, task):
                advantages = [
                    a for turn in record.get("turns", []) for a in turn.get("values", {}).get("advantage", [])
                ]
                groups.setdefault(int(record.get("group", 0)), []).append((index, record, _mean(advantages)))
        shared_pi = {}
        for group, members in groups.items():
            pis = [
                turn.get("info", {}).get("privileged") for _, record, _ in members for turn in record.get("turns", [])
            ]
            texts = {pi for pi in pis if isinstance(pi, str)} - {""}  # a PI recorded as JSON is shown per turn
            if len(texts) == 1:  # one PI for the whole group (ORSD's rubric)
                shared_pi[group] = texts.pop()
        steps = run.recorded_steps()
        position = steps.index(step) if step in steps else -1
        return render_template(
            "step.html",
            run=run,
            step=step,
            groups=groups,
            total=len(records),
            outcome=outcome,
            task=task,
            previous=steps[position - 1] if position > 0 else None,
            following=steps[position + 1] if 0 <= position < len(steps) - 1 else None,
            examples=examples.records,
            shared_pi=shared_pi,
            problems=loaded_step.problems + examples.problems,
        )

    @app.get("/run/<name>/step/<step_text>/trajectory/<index_text>")
    def trajectory_page(name: str, step_text: str, index_text: str) -> str:
        run = run_or_404(name)
        step, index = parse_number(step_text, "step"), parse_number(index_text, "trajectory")
        loaded_step = run.step(step)
        records = loaded_step.records
        record = run.trajectory_record(step, index, records)
        outcome = record.get("values", {}).get("advantage")
        turns = with_shaping(record.get("turns", []), float(outcome) if isinstance(outcome, (int, float)) else None)
        scales = value_scales(turns)  # over the whole trajectory, so a token's colour is the same on every page
        pages = token_pages(turns)
        page = parse_number(request.args.get("page", "1"), "page")
        if not 1 <= page <= len(pages):
            abort(404, f"Trajectory {index} of step {step} has token pages 1 to {len(pages)}, not {page}.")
        siblings = [(i, r) for i, r in enumerate(records) if r.get("group") == record.get("group")]
        names = value_names(scales)
        rewards = {float(r["reward"]) for _, r in siblings if isinstance(r.get("reward"), (int, float))}
        anchors = anchor_peers(records, index)
        first_pages: dict[int, dict[int, int]] = {}  # record index -> turn number -> the page it starts on
        for peer in {peer for peers in anchors.values() for peer, _, _ in peers}:
            chunks = token_pages(records[peer].get("turns", []))
            starts = {turn: number for number, chunk in enumerate(chunks, 1) for turn, lo, _ in chunk if lo == 0}
            first_pages[peer] = {t["turn"]: starts.get(k, 1) for k, t in enumerate(records[peer].get("turns", []))}
        return render_template(
            "trajectory.html",
            run=run,
            step=step,
            index=index,
            record=record,
            turns=[_turn_view(turns[position], scales, lo, hi) for position, lo, hi in pages[page - 1]],
            scales=scales,
            names=names,
            shown_name=shown_value(scales),
            outcome_advantage=float(outcome) if isinstance(outcome, (int, float)) else None,
            no_credit="advantage" in scales and scales["advantage"] == 0,
            uniform_reward=rewards.pop() if len(rewards) == 1 and len(siblings) > 1 else None,
            centres=CENTRES,
            labels=LABELS,
            siblings=siblings,
            anchors=anchors,
            first_pages=first_pages,
            page=page,
            pages=len(pages),
            problems=loaded_step.problems,
        )

    @app.get("/run/<name>/eval/<step_text>")
    def evaluation_page(name: str, step_text: str) -> str:
        run = run_or_404(name)
        step = parse_number(step_text, "step")
        outcome, task = _outcome_filter()
        evaluation = run.evaluation(step)
        episodes = evaluation.records
        kept = [(i, e) for i, e in enumerate(episodes) if _kept(e, outcome, task)]
        return render_template(
            "evaluation.html",
            run=run,
            step=step,
            episodes=kept,
            total=len(episodes),
            outcome=outcome,
            task=task,
            problems=evaluation.problems,
        )

    @app.get("/run/<name>/eval/<step_text>/trajectory/<index_text>")
    def evaluation_trajectory_page(name: str, step_text: str, index_text: str) -> str:
        run = run_or_404(name)
        step, index = parse_number(step_text, "step"), parse_number(index_text, "episode")
        evaluation = run.evaluation(step)
        episodes = evaluation.records
        if not 0 <= index < len(episodes):
            abort(
                404,
                f"The evaluation at step {step} of run {name!r} has episodes 0 to {len(episodes) - 1}, not {index}.",
            )
        episode = episodes[index]
        return render_template(
            "evaluation_trajectory.html",
            run=run,
            step=step,
            index=index,
            episode=episode,
            turns=[_plain_turn_view(turn) for turn in episode.get("turns", [])],
            count=len(episodes),
            problems=evaluation.problems,
        )

    return app


def serve(folders: Sequence[str | os.PathLike[str]], *, host: str = "127.0.0.1", port: int = 5000) -> None:
    """Serves the viewer until interrupted (threaded werkzeug server)."""
    from werkzeug.serving import run_simple

    app = create_app(folders)
    print(f"viewer: http://{host}:{port}/ ({len(app.extensions['run_store'].runs())} run(s))", flush=True)
    run_simple(host, port, app, threaded=True)
