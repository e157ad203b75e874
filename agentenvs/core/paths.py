"""Where envs find their data and keep their caches.

Every env resolves data the same way: an explicit argument wins, else an environment
variable, else a list of default names inside the data folder. One rule holds for all
of them: **an empty string means "not given"** (``data_path=""`` or ``FOO_DATA=`` in a
shell behaves as if it were absent), and ``~`` is expanded.

Caches (BM25 indexes, generated games) live under :func:`cache_dir`:
``$AGENTENVS_CACHE/<subfolder>`` or ``~/.cache/agentenvs/<subfolder>``.

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> _ = open(os.path.join(folder, "b.json"), "w").close()
    >>> locate_data("product file", folder=folder, names=("a.json", "b.json"), owner="Shop").name
    'b.json'
    >>> given(""), given(None), given("x")
    (None, None, 'x')
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

CACHE_ENV_VAR = "AGENTENVS_CACHE"
"""Root of all agentenvs caches (default ``~/.cache/agentenvs``)."""

PathArg = str | os.PathLike[str]


def given(value: PathArg | None) -> PathArg | None:
    """``value``, or None when it is None or an empty string (the "not given" rule)."""
    if value is None or (isinstance(value, str) and value == ""):
        return None
    return value


def cache_dir(subfolder: str = "") -> Path:
    """``$AGENTENVS_CACHE/<subfolder>``, else ``~/.cache/agentenvs/<subfolder>`` (not created)."""
    root = given(os.environ.get(CACHE_ENV_VAR))
    base = Path(root).expanduser() if root is not None else Path.home() / ".cache" / "agentenvs"
    return base / subfolder if subfolder else base


def data_folder(explicit: PathArg | None, env_var: str | None) -> Path | None:
    """The data folder: ``explicit``, else ``$env_var``, else None (empty strings are not given)."""
    chosen = given(explicit)
    if chosen is None and env_var is not None:
        chosen = given(os.environ.get(env_var))
    return None if chosen is None else Path(chosen).expanduser()


def _exists(path: Path, kind: Literal["file", "dir"]) -> bool:
    return path.is_file() if kind == "file" else path.is_dir()


def locate_data(
    what: str,
    *,
    explicit: PathArg | None = None,
    folder: PathArg | None = None,
    env_var: str | None = None,
    names: Sequence[str] = (),
    kind: Literal["file", "dir"] = "file",
    owner: str = "agentenvs",
    folder_argument: str = "data_path",
    hint: str = "",
) -> Path:
    """Finds one data file (or folder).

    Order: ``explicit`` (a path to the item itself, which must exist); else the first of
    ``names`` that exists in the data folder (``folder``, else ``$env_var``).

    Args:
        what: What is looked for, for messages (``"product file"``).
        explicit: A path to the item itself (e.g. a ``questions_file=`` argument).
        folder: The data folder argument (e.g. ``data_path=``).
        env_var: Environment variable naming the data folder when ``folder`` is not given.
        names: Default names inside the data folder, preferred first.
        kind: Whether the item is a ``"file"`` or a ``"dir"``.
        owner: Who asks (the env's name), the messages' prefix.
        folder_argument: The name of the folder argument, for messages.
        hint: How to get the data, appended to messages.

    Raises:
        FileNotFoundError: naming the path tried, or how to give the folder.
    """
    suffix = f" {hint}" if hint else ""
    chosen = given(explicit)
    if chosen is not None:
        path = Path(chosen).expanduser()
        if not _exists(path, kind):
            raise FileNotFoundError(f"{owner}: no {what} at {path}.{suffix}")
        return path
    root = data_folder(folder, env_var)
    if root is None or not names:
        env_part = f" or set ${env_var}" if env_var else ""
        example = f"<folder holding {names[0]}>" if names else "<folder>"
        raise FileNotFoundError(f"{owner}: the {what} is needed: pass {folder_argument}={example}{env_part}.{suffix}")
    for name in names:
        if _exists(root / name, kind):
            return root / name
    raise FileNotFoundError(f"{owner}: no {what} at {root / names[0]}.{suffix}")
