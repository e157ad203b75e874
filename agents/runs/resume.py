"""What a run may do with a folder that already holds a run: refuse to overwrite it, or resume
it only with the settings it was trained with.

A fresh start never deletes another run's records (:func:`refuse_fresh_start`): it names what
is there and suggests a new ``output_dir`` or ``resume``. A resume compares the settings with
the run's saved ``config.json`` (:func:`check_resumed_config`): a changed ``group_size`` or
``learning_rate`` would silently continue a different run, so it is an error naming the
changed fields unless the config's ``resume_changed_config`` says otherwise.

Example:
    >>> changed_fields({"group_size": 4, "seed": 0}, {"group_size": 8, "seed": 0})
    ['group_size']
    >>> changed_fields({"group_size": 4, "progress": True}, {"group_size": 4, "progress": False}, ignored={"progress"})
    []
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from agents.settings import RunSettings

CONFIG_FILE = "config.json"


def existing_records(folder: str | os.PathLike[str], names: Collection[str]) -> list[str]:
    """Which of ``names`` (files or folders of a run) exist in ``folder`` and are not empty."""
    found = []
    for name in names:
        path = Path(folder) / name
        if (path.is_file() and path.stat().st_size > 0) or (path.is_dir() and any(path.iterdir())):
            found.append(name)
    return found


def refuse_fresh_start(folder: str | os.PathLike[str], names: Collection[str], owner: str) -> None:
    """Raises if ``folder`` holds any of a run's records ``names`` (a fresh start would delete them).

    Raises:
        FileExistsError: naming the folder and the records, suggesting a new ``output_dir`` or ``resume``.
    """
    found = existing_records(folder, names)
    if found:
        raise FileExistsError(
            f"{owner}.output_dir {str(folder)!r} already holds a run ({', '.join(found)}); a fresh start "
            f"would delete its records: choose a new output_dir, or pass resume=True to continue it"
        )


def changed_fields(saved: Mapping[str, Any], current: Mapping[str, Any], *, ignored: Collection[str] = ()) -> list[str]:
    """The fields whose values differ between two configs as JSON values (missing counts as differing)."""
    names = (set(saved) | set(current)) - set(ignored)
    return sorted(name for name in names if saved.get(name, ...) != current.get(name, ...))


def saved_run(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The run's ``config.json`` (``{"model", "env", "config", ...}``), or None when missing or unreadable."""
    try:
        data = json.loads((Path(folder) / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nesting too deep to be a config
        return None
    return data if isinstance(data, dict) and isinstance(data.get("config"), dict) else None


def check_resumed_config(
    folder: str | os.PathLike[str],
    run: Mapping[str, Any],
    *,
    owner: str,
    ignored: Collection[str],
    allow_changes: bool,
    checkpoint_config: Mapping[str, Any] | None = None,
) -> list[str]:
    """Compares a resuming run's settings with the saved ones; returns the changed names.

    Args:
        folder: The run folder.
        run: ``{"env": ..., "config": {...}}`` of the resuming run (JSON values).
        owner: The config class's name, for the message.
        ignored: Config fields a resume may change (where the run writes, progress bars, ...).
        allow_changes: The user's explicit override (``resume_changed_config``).
        checkpoint_config: The checkpoint's own config, compared when ``config.json`` is missing.

    Raises:
        ValueError: naming the changed fields, unless ``allow_changes``.
    """
    saved = saved_run(folder)
    if saved is None:
        if checkpoint_config is None:
            return []
        saved = {"env": run.get("env"), "config": dict(checkpoint_config)}
    changed = changed_fields(saved["config"], run["config"], ignored=ignored)
    if "env" in saved and saved["env"] != run.get("env"):
        changed.insert(0, "env")
    if changed and not allow_changes:
        details = ", ".join(f"{name}: {_shown(saved, name)} -> {_shown(run, name)}" for name in changed)
        raise ValueError(
            f"{owner}: resuming {str(folder)!r} with changed settings ({details}); the checkpoint was "
            f"trained with the saved ones. Use the saved settings, a new output_dir, or "
            f"{owner}.resume_changed_config=True to continue with the new ones"
        )
    return changed


def check_resume(
    folder: str | os.PathLike[str],
    run: Mapping[str, Any],
    config: RunSettings,
    *,
    checkpoint_config: Mapping[str, Any] | None = None,
) -> None:
    """:func:`check_resumed_config` with a run config's own rules (``RESUME_MAY_CHANGE``,
    ``resume_changed_config``); says which settings a permitted resume changes."""
    changed = check_resumed_config(
        folder,
        run,
        owner=type(config).__name__,
        ignored=config.RESUME_MAY_CHANGE,
        allow_changes=config.resume_changed_config,
        checkpoint_config=checkpoint_config,
    )
    if changed:
        print(f"resuming with changed settings (resume_changed_config=True): {', '.join(changed)}", flush=True)


def _shown(run: Mapping[str, Any], name: str) -> str:
    value = run.get("env") if name == "env" else run["config"].get(name, "(missing)")
    text = json.dumps(value) if not isinstance(value, str) or value != "(missing)" else value
    return text if len(text) <= 60 else text[:57] + "..."
