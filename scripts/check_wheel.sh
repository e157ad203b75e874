#!/usr/bin/env bash
# The package as PyPI would get it (run by scripts/check.sh): build the sdist and, from it, the
# wheel (`python -m build`), check both with `twine check --strict`, then install the wheel (core
# only, no extras) into a fresh venv and smoke-test it there, outside the source tree:
# scripts/smoke_core.py and the `agentenvs` console script. About a minute with pip's cache.
# PYTHON: the interpreter that has build and twine (default .venv/bin/python, the dev extra).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-.venv/bin/python}
WORK=$(mktemp -d -t agentenvs-wheel-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

"$PYTHON" -m build --outdir "$WORK/dist" . >"$WORK/build.log" 2>&1 || {
  cat "$WORK/build.log"
  exit 1
}
"$PYTHON" -m twine check --strict "$WORK"/dist/*

# The sdist holds what the wheel is built from, and neither holds a conftest.py (the doctest
# collection rules live in the root conftest.py, outside the packages).
"$PYTHON" - "$WORK"/dist/*.tar.gz "$WORK"/dist/*.whl <<'EOF'
import sys
import tarfile
import zipfile

sdist, wheel = sys.argv[1:]
with tarfile.open(sdist) as archive:
    sdist_names = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
with zipfile.ZipFile(wheel) as archive:
    wheel_names = archive.namelist()
for kind, names in (("sdist", sdist_names), ("wheel", wheel_names)):
    shipped = [name for name in names if name.rsplit("/", 1)[-1] == "conftest.py"]
    assert not shipped, f"the {kind} ships {shipped}"
for name in ("LICENSE", "pyproject.toml", "agentenvs/py.typed", "agents/viewer/templates/base.html"):
    assert name in sdist_names, f"the sdist lacks {name}"
for name in ("agentenvs/py.typed", "agents/py.typed", "wrappers/py.typed", "agents/viewer/static/viewer.js"):
    assert name in wheel_names, f"the wheel lacks {name}"
assert any(name.endswith(".dist-info/licenses/LICENSE") for name in wheel_names), "the wheel lacks LICENSE"
print(f"wheel: {len(wheel_names)} files, sdist: {len(sdist_names)} files, no conftest.py")
EOF

"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q "$WORK"/dist/*.whl
cd "$WORK"  # outside the source tree, so the installed package is the one imported
venv/bin/agentenvs --help >/dev/null
venv/bin/agentenvs list >/dev/null
venv/bin/python "$ROOT/scripts/smoke_core.py"
