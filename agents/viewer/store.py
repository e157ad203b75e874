"""What the viewer reads from run folders, one file at a time and only when a page needs it.

A :class:`RunStore` maps run names to folders fixed at start-up; every other path is built
from a validated integer (a step, an index), never from request text, so no request can
reach outside them. A run's page reads its ``config.json`` and ``metrics.jsonl`` and lists
file names; a step's page reads that step's record file (bounded by ``record_groups``); a
trajectory's page renders one trajectory of it.

Run folders are untrusted input, and this module is the one place that reads them: every
file is bounded in size, every JSON value in nesting depth and integer size, every record
checked for the shapes the pages rely on (:func:`parse_json`, :func:`read_json_lines`). A bad
line or file becomes a :class:`FileProblem` ("``metrics.jsonl line 3: not JSON ...``") that the
pages show, and the rest of the file is still read; a page whose file has nothing readable
raises :class:`BadFile`. A last line without its newline is a running trainer's line still
being written and is left out silently.

Example:
    >>> import tempfile
    >>> store = RunStore([tempfile.mkdtemp(prefix="run-")])
    >>> [run.recorded_steps() for run in store.runs()]
    [[]]
    >>> store.get("nope")
    Traceback (most recent call last):
    ...
    agents.viewer.store.UnknownRun: Unknown run 'nope'.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.reports.curves import RunCurves, held_out_points
from agents.runs.credit_record import RECORD_DIR, recorded_steps, step_path

EVAL_FILE = re.compile(r"eval_step_([0-9]{1,9})\.jsonl")
NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9._-]+")
CREDIT_EXAMPLES_FILE = "credit_examples.jsonl"
MAX_FILE_BYTES = 512 * 2**20
"""Largest run file read (a 200k-token credit record is about 10 MB)."""
MAX_LINE_BYTES = 128 * 2**20
"""Largest JSON value parsed (a line of a JSON-lines file, or ``config.json``)."""
MAX_DEPTH = 32
"""Deepest nesting of lists and objects accepted (records use 4; ``json`` itself would recurse ~1000 deep)."""
MAX_INTEGER = 2**63
"""Largest integer magnitude accepted (larger ones do not format or convert to float)."""
MAX_PROBLEMS_PER_FILE = 10
PLAIN_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Value names the pages may use in attribute names (``data-<name>``); others are left out."""


class BadRecord(ValueError):
    """A JSON value or record the viewer cannot show (the message says why)."""


@dataclass(frozen=True)
class FileProblem:
    """Why (part of) a run file is not shown.

    >>> str(FileProblem("metrics.jsonl", 3, "not JSON")), str(FileProblem("config.json", None, "not UTF-8 text"))
    ('metrics.jsonl line 3: not JSON', 'config.json: not UTF-8 text')
    """

    file: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file} line {self.line}"
        return f"{where}: {self.reason}"


class BadFile(LookupError):
    """A file a page needs holds no record the viewer can show."""

    def __init__(self, problems: Sequence[FileProblem]) -> None:
        super().__init__("; ".join(map(str, problems)))
        self.problems = list(problems)

    def __str__(self) -> str:
        return str(self.args[0])


STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
"""A JSON string (escapes included), cut out before counting brackets."""
EMPTY_PAIRS = re.compile(rb"\[\]|\{\}")
LONG_NUMBERS = re.compile(rb"-?[0-9][0-9.eE+-]{%d,}" % (len(str(MAX_INTEGER)) - 1))


SURROGATES = re.compile("[\ud800-\udfff]")
"""Code points a JSON escape can make but UTF-8 cannot encode."""


def _check_bounds(data: bytes) -> None:
    """Raises :class:`BadRecord` for JSON nested deeper than :data:`MAX_DEPTH` or an integer past :data:`MAX_INTEGER`.

    Works on the text before it is parsed, with regular expressions only (a 10 MB record in
    milliseconds): strings cut out, then the innermost ``[]``/``{}`` pairs removed once per level.
    """
    bare = STRINGS.sub(b"", data)
    for number in LONG_NUMBERS.findall(bare):
        if number.lstrip(b"-").isdigit() and abs(int(number)) > MAX_INTEGER:
            raise BadRecord(f"an integer of more than {len(str(MAX_INTEGER))} digits")
    brackets = bare.translate(None, delete=bytes(sorted(set(range(256)) - set(b"[]{}"))))
    for _ in range(MAX_DEPTH):
        if not brackets:
            return
        brackets = EMPTY_PAIRS.sub(b"", brackets)
    if EMPTY_PAIRS.search(brackets):  # what is left without a pair is unbalanced: json.loads names it
        raise BadRecord(f"nested deeper than {MAX_DEPTH} levels")


def parse_json(data: bytes) -> Any:
    """One JSON value from UTF-8 bytes, bounded in size, nesting and integer size.

    >>> parse_json(b'{"step": 1}')
    {'step': 1}
    >>> parse_json(b"[" * 100_000)
    Traceback (most recent call last):
    ...
    agents.viewer.store.BadRecord: nested deeper than 32 levels

    Raises:
        BadRecord: saying what is wrong (size, encoding, syntax, nesting).
    """
    if len(data) > MAX_LINE_BYTES:
        raise BadRecord(f"{len(data):,} bytes, over the viewer's limit of {MAX_LINE_BYTES:,}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadRecord(f"not UTF-8 text (byte {error.start})") from None
    _check_bounds(data)
    try:
        value = json.loads(text)
    except RecursionError:  # json recurses once per level (a safety net: the bound above comes first)
        raise BadRecord(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:
        raise BadRecord(f"not JSON ({str(error)[:120]})") from None
    # A "\\ud800" escape decodes to a lone surrogate, which no page can encode: each becomes U+FFFD.
    return _without_surrogates(value) if b"\\u" in data else value


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return SURROGATES.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_without_surrogates(key): _without_surrogates(item) for key, item in value.items()}
    return value


def _file_bytes(path: Path, name: str) -> bytes:
    """The bytes of ``path``, the file a page names ``name`` (relative to its run folder); a link
    that leads out of the run folder is not followed."""
    run_folder = path.parents[len(Path(name).parts) - 1]
    try:
        if not path.resolve().is_relative_to(run_folder.resolve()):
            raise BadRecord("a link out of the run folder (not followed)")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise BadRecord(f"{size:,} bytes, over the viewer's limit of {MAX_FILE_BYTES:,}")
        return path.read_bytes()
    except OSError as error:
        raise BadRecord(f"unreadable ({error.strerror or type(error).__name__})") from None


Check = Callable[[dict[str, Any], Callable[[str], None]], dict[str, Any]]
"""A record check: returns the record to show (or raises :class:`BadRecord`); notes what it left out."""


@dataclass
class Problems:
    """The problems found in one file, at most :data:`MAX_PROBLEMS_PER_FILE` kept, the rest counted."""

    file: str
    kept: list[FileProblem] = field(default_factory=list)
    more: int = 0

    def add(self, line: int | None, reason: str) -> None:
        """Notes one problem (counted only, past the limit)."""
        if len(self.kept) < MAX_PROBLEMS_PER_FILE:
            self.kept.append(FileProblem(self.file, line, reason))
        else:
            self.more += 1

    def listed(self) -> list[FileProblem]:
        """The kept problems, then one line counting the others."""
        extra = [FileProblem(self.file, None, f"{self.more} more problem(s) not listed")] if self.more else []
        return self.kept + extra


def read_json_lines(
    path: Path, name: str, check: Check, *, required: bool = False
) -> tuple[list[dict[str, Any]], list[FileProblem]]:
    """The records of a JSON-lines file that pass ``check``, and the problems of the others.

    Every newline-terminated line is parsed (:func:`parse_json`) and checked on its own, so a bad
    line costs only itself; a last line without a newline is still being written and is left out.

    Args:
        path: The file.
        name: The file as the pages name it (relative to the run folder).
        check: The record check (see :data:`Check`).
        required: Whether a file without a record is itself a problem.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "m.jsonl"
    >>> _ = path.write_bytes(b'{"step": 0}\\n[1]\\n\\xff\\n{"step": 1}\\n{"st')
    >>> records, problems = read_json_lines(path, "m.jsonl", lambda record, note: record)
    >>> records, [str(p) for p in problems]
    ([{'step': 0}, {'step': 1}], ['m.jsonl line 2: not a JSON object', 'm.jsonl line 3: not UTF-8 text (byte 0)'])
    """
    problems = Problems(name)
    records: list[dict[str, Any]] = []
    try:
        lines = _file_bytes(path, name).split(b"\n")[:-1]
    except BadRecord as error:
        return [], [FileProblem(name, None, str(error))]
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = parse_json(line)
            if not isinstance(value, dict):
                raise BadRecord("not a JSON object")
            records.append(check(value, functools.partial(problems.add, number)))
        except BadRecord as error:
            problems.add(number, str(error))
    if required and not records:
        problems.add(None, "no complete record to show")
    return records, problems.listed()


def read_json_file(path: Path, name: str, check: Check) -> tuple[dict[str, Any], list[FileProblem]]:
    """One JSON object file (``config.json``) that passes ``check``: ``{}`` and its problem otherwise."""
    try:
        value = parse_json(_file_bytes(path, name))
        if not isinstance(value, dict):
            raise BadRecord("not a JSON object")
        problems = Problems(name)
        return check(value, functools.partial(problems.add, None)), problems.listed()
    except BadRecord as error:
        return {}, [FileProblem(name, None, str(error))]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float))


def _whole(value: Any) -> bool:
    return type(value) is int and 0 <= value < 10**9


def _numbers(record: dict[str, Any], keys: Sequence[str], where: str = "") -> None:
    for key in keys:
        if record.get(key) is not None and not _is_number(record[key]):
            raise BadRecord(f"{where}{key} is not a number")


def _object(record: dict[str, Any], key: str, where: str = "") -> dict[str, Any]:
    value = record.get(key, {})
    if not isinstance(value, dict):
        raise BadRecord(f"{where}{key} is not an object")
    return value


def _objects(record: dict[str, Any], key: str, where: str = "") -> list[dict[str, Any]]:
    value = record.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise BadRecord(f"{where}{key} is not a list of objects")
    return value


def _pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(type(end) is int for end in value)


def _pairs(values: list[Any]) -> bool:
    """Whether every item is a ``[start, end]`` of ints (``map`` and ``set`` only: a 200k-token turn in milliseconds)."""
    if not set(map(type, values)) <= {list} or not set(map(len, values)) <= {2}:
        return False
    return set(map(type, itertools.chain.from_iterable(values))) <= {int}


def _number_list(values: Any) -> bool:
    return isinstance(values, list) and set(map(type, values)) <= {int, float}


def check_settings(settings: dict[str, Any], note: Callable[[str], None]) -> dict[str, Any]:
    """``config.json``: its ``config`` an object, ``config.eval_episodes`` a whole number >= 1 when given.

    >>> check_settings({"config": {"eval_episodes": 4}}, print)
    {'config': {'eval_episodes': 4}}
    """
    config = settings.get("config", {})
    if not isinstance(config, dict):
        raise BadRecord("config is not an object")
    episodes = config.get("eval_episodes")
    if episodes is not None and not (_whole(episodes) and episodes >= 1):
        raise BadRecord("config.eval_episodes is not a whole number >= 1")
    return settings


def check_metrics(record: dict[str, Any], note: Callable[[str], None]) -> dict[str, Any]:
    """A ``metrics.jsonl`` record: a whole-number ``step``; a held-out success rate in [0, 1]."""
    if not _whole(record.get("step")):
        raise BadRecord("no whole-number step")
    rate: Any = record.get("eval/success_rate")
    if "eval/success_rate" in record and not (_is_number(rate) and 0 <= rate <= 1):
        raise BadRecord(f"eval/success_rate is not a rate in [0, 1]: {str(rate)[:40]!r}")
    _numbers(record, ["eval/mean_score"])
    return record


def _check_turn(turn: dict[str, Any], where: str) -> None:
    span = turn.get("action_span")
    if isinstance(span, dict):
        span = [span.get("start"), span.get("end")]
    if span is not None and not _pair(span):
        raise BadRecord(f"{where}action_span is not null, [start, end] or {{start, end}}")
    _numbers(turn, ["reward"], where)


def check_episode(episode: dict[str, Any], note: Callable[[str], None]) -> dict[str, Any]:
    """A held-out episode: a numeric score, turns that are objects with a usable action span."""
    _numbers(episode, ["score", "reward"])
    for position, turn in enumerate(_objects(episode, "turns")):
        _check_turn(turn, f"turns[{position}].")
    return episode


def check_evaluation(record: dict[str, Any], note: Callable[[str], None]) -> dict[str, Any]:
    """An ``eval_step_<N>.jsonl`` record: a group whose ``trajectories`` are episodes (or one episode)."""
    if "trajectories" in record and not isinstance(record["trajectories"], list):
        raise BadRecord("trajectories is not a list")
    for episode in record.get("trajectories", [record]):
        if not isinstance(episode, dict):
            raise BadRecord("trajectories holds a non-object")
        check_episode(episode, note)
    return record


def _plain_values(values: dict[str, Any], where: str, note: Callable[[str], None]) -> dict[str, Any]:
    kept = {}
    for name, value in values.items():
        if PLAIN_NAME.fullmatch(name):
            kept[name] = value
        else:
            note(f"{where}value {name[:60]!r} left out: not a plain name (letters, digits, _ and -)")
    return kept


def check_credit(record: dict[str, Any], note: Callable[[str], None]) -> dict[str, Any]:
    """A credit record (:mod:`agents.runs.credit_record`): the fields the pages read, with their types.

    Values whose name could not be an HTML attribute name are left out (and noted).
    """
    _numbers(record, ["score", "reward"])
    for key in ("group", "member"):
        if key in record and not _whole(record[key]):
            raise BadRecord(f"{key} is not a whole number")
    values = _object(record, "values")
    if not all(_is_number(value) for value in values.values()):
        raise BadRecord("values holds a non-number")
    turns = []
    for position, turn in enumerate(_objects(record, "turns")):
        where = f"turns[{position}]."
        _check_turn(turn, where)
        if not _whole(turn.get("turn", position)):
            raise BadRecord(f"{where}turn is not a whole number")
        offsets, ids = turn.get("token_offsets", []), turn.get("token_ids", [])
        if not isinstance(offsets, list) or not _pairs(offsets):
            raise BadRecord(f"{where}token_offsets is not a list of [start, end]")
        if not isinstance(ids, list):
            raise BadRecord(f"{where}token_ids is not a list")
        token_values = _object(turn, "values", where)
        if not all(map(_number_list, token_values.values())):
            raise BadRecord(f"{where}values holds something other than lists of numbers")
        _object(turn, "info", where)
        turns.append({**turn, "turn": turn.get("turn", position), "values": _plain_values(token_values, where, note)})
    return {**record, "values": _plain_values(values, "", note), "turns": turns}


def check_any(record: dict[str, Any], note: Callable[[str], None]) -> dict[str, Any]:
    """Any JSON object (bounded by :func:`parse_json`): what is shown only as JSON text."""
    return record


class RecentFiles:
    """The last few step files read, kept parsed while unchanged (paging through a long trajectory reads one file).

    Keyed by path, size and modification time, so a file rewritten (a resumed run) is read again.
    Callers must not change the records they get.
    """

    def __init__(self, size: int = 4) -> None:
        self._size = size
        self._entries: dict[tuple[str, int, int], tuple[list[dict[str, Any]], list[FileProblem]]] = {}
        self._lock = threading.Lock()  # the viewer's server is threaded

    def read(
        self, path: Path, name: str, check: Check, *, required: bool = False
    ) -> tuple[list[dict[str, Any]], list[FileProblem]]:
        """:func:`read_json_lines`, from memory when the file is unchanged since it was last read."""
        try:
            status = path.stat()
        except OSError:
            return read_json_lines(path, name, check, required=required)
        key = (str(path), status.st_size, status.st_mtime_ns)
        with self._lock:
            found = self._entries.get(key)
        if found is not None:
            return found
        found = read_json_lines(path, name, check, required=required)
        with self._lock:
            self._entries[key] = found
            while len(self._entries) > self._size:
                del self._entries[next(iter(self._entries))]
        return found


@dataclass
class Loaded:
    """What a page read: the records it shows and the problems of the files it read."""

    records: list[dict[str, Any]]
    problems: list[FileProblem] = field(default_factory=list)


class UnknownRun(LookupError):
    """A run name the store does not serve."""

    def __str__(self) -> str:
        return str(self.args[0])


class NotRecorded(LookupError):
    """A step, evaluation or trajectory a run has no record of."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Run:
    """One run folder under its name."""

    name: str
    folder: Path
    recent: RecentFiles = field(default_factory=RecentFiles, compare=False, repr=False)

    def _relative(self, path: Path) -> str:
        return path.relative_to(self.folder).as_posix()

    def load(self) -> tuple[RunCurves, list[FileProblem]]:
        """Settings, metrics and held-out points (as :func:`agents.reports.curves.load_run`), and the problems.

        Raises:
            NotRecorded: when the folder is gone.
        """
        if not self.folder.is_dir():
            raise NotRecorded(f"The folder of run {self.name!r} is gone.")
        settings, problems = self.settings_and_problems()
        metrics = self.folder / "metrics.jsonl"
        records: list[dict[str, Any]] = []
        if metrics.is_file():
            records, bad = read_json_lines(metrics, "metrics.jsonl", check_metrics)
            problems += bad

        def outcomes(path: Path) -> list[tuple[bool, float]]:
            episodes, bad = self._episodes(path)
            problems.extend(bad)
            return [(bool(e["success"]), float(e.get("score") or 0.0)) for e in episodes if "success" in e]

        episodes = settings.get("config", {}).get("eval_episodes")
        held_out = held_out_points(self.folder, records, episodes, outcomes)
        return RunCurves(self.name, self.folder, settings, records, held_out), problems

    def curves(self) -> RunCurves:
        """Settings, metrics and held-out points (:meth:`load` without its problems)."""
        return self.load()[0]

    def settings_and_problems(self) -> tuple[dict[str, Any], list[FileProblem]]:
        """``config.json`` (``{}`` when missing or bad) and its problems."""
        path = self.folder / "config.json"
        if not path.is_file():
            return {}, []
        return read_json_file(path, "config.json", check_settings)

    def settings(self) -> dict[str, Any]:
        """``config.json`` (``{}`` when missing or bad)."""
        return self.settings_and_problems()[0]

    def recorded_steps(self) -> list[int]:
        """Steps with a credit record (file names only)."""
        return recorded_steps(self.folder)

    def evaluation_steps(self) -> list[int]:
        """Steps with held-out trajectories (file names only)."""
        folder = self.folder / "trajectories"
        if not folder.is_dir():
            return []
        return sorted(int(match[1]) for name in os.listdir(folder) if (match := EVAL_FILE.fullmatch(name)))

    def step(self, step: int) -> Loaded:
        """The credit records of one step that can be shown, and the problems of its file.

        A record's index (in links) is its position among the readable records.

        Raises:
            NotRecorded: when the step has no file.
            BadFile: when its file has no record to show.
        """
        path = step_path(self.folder, step)
        if not path.is_file():
            raise NotRecorded(
                f"Run {self.name!r} has no credit record for step {step} (recorded: {_span(self.recorded_steps())})."
            )
        records, problems = self.recent.read(path, f"{RECORD_DIR}/{path.name}", check_credit, required=True)
        if not records:
            raise BadFile(problems)
        return Loaded(records, problems)

    def step_records(self, step: int) -> list[dict[str, Any]]:
        """The credit records of one step (:meth:`step` without its problems)."""
        return self.step(step).records

    def trajectory_record(self, step: int, index: int, records: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Record ``index`` of one step (of ``records``, that step's, when given).

        Raises:
            NotRecorded: when the step or the index is not there.
        """
        records = self.step_records(step) if records is None else records
        if not 0 <= index < len(records):
            raise NotRecorded(
                f"Step {step} of run {self.name!r} has trajectories 0 to {len(records) - 1}, not {index}."
            )
        return records[index]

    def _episodes(self, path: Path, *, required: bool = False) -> tuple[list[dict[str, Any]], list[FileProblem]]:
        records, problems = read_json_lines(path, self._relative(path), check_evaluation, required=required)
        flat = [episode for record in records for episode in record.get("trajectories", [record])]
        return flat, problems

    def evaluation(self, step: int) -> Loaded:
        """The held-out trajectories of one evaluation, flat (groups of one unpacked), and the file's problems.

        Raises:
            NotRecorded: when the step has no evaluation file.
            BadFile: when it has no episode to show.
        """
        path = self.folder / "trajectories" / f"eval_step_{int(step)}.jsonl"
        if not path.is_file():
            raise NotRecorded(
                f"Run {self.name!r} has no held-out trajectories for step {step}"
                f" (evaluated: {_span(self.evaluation_steps())})."
            )
        episodes, problems = self._episodes(path, required=True)
        if not episodes:
            raise BadFile(problems)
        return Loaded(episodes, problems)

    def credit_examples(self, step: int) -> Loaded:
        """The rule's readable examples logged at ``step`` (``credit_examples.jsonl``), and the file's problems."""
        path = self.folder / CREDIT_EXAMPLES_FILE
        if not path.is_file():
            return Loaded([])
        records, problems = read_json_lines(path, CREDIT_EXAMPLES_FILE, check_any)
        return Loaded([record for record in records if record.get("step") == step], problems)


def _span(steps: Sequence[int]) -> str:
    if not steps:
        return "none"
    if len(steps) <= 6:
        return ", ".join(map(str, steps))
    return f"{len(steps)} steps, {steps[0]} to {steps[-1]}"


def run_names(folders: Sequence[Path]) -> list[str]:
    """A URL-safe, distinct name per folder: its own name, with its parent's when two agree.

    >>> run_names([Path("a/rl"), Path("b/rl"), Path("c/sft my")])
    ['a-rl', 'b-rl', 'sft_my']
    """
    base = [NAME_CHARACTERS.sub("_", folder.resolve().name) or "run" for folder in folders]
    names = [
        NAME_CHARACTERS.sub("_", f"{folder.resolve().parent.name}-{name}") if base.count(name) > 1 else name
        for folder, name in zip(folders, base, strict=True)
    ]
    seen: dict[str, int] = {}
    distinct = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        distinct.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return distinct


class RunStore:
    """The run folders a viewer serves, by name.

    Args:
        folders: Run folders (each written by a training run, or being written).

    Raises:
        ValueError: when there is no folder, or one is missing (naming it).
    """

    def __init__(self, folders: Sequence[str | os.PathLike[str]]) -> None:
        if not folders:
            raise ValueError("the viewer needs at least one run folder")
        paths = [Path(folder) for folder in folders]
        for path in paths:
            if not path.is_dir():
                raise ValueError(f"run folder {str(path)!r} does not exist")
        recent = RecentFiles()
        self._runs = {
            name: Run(name, path.resolve(), recent) for name, path in zip(run_names(paths), paths, strict=True)
        }

    def runs(self) -> list[Run]:
        """Every run, in the order given."""
        return list(self._runs.values())

    def get(self, name: str) -> Run:
        """The run called ``name``.

        Raises:
            UnknownRun: naming it.
        """
        run = self._runs.get(name)
        if run is None:
            raise UnknownRun(f"Unknown run {name[:80]!r}.")
        return run
