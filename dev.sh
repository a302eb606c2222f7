#!/usr/bin/env bash
# gptuner's two commands. Each prepares everything it needs on a fresh Debian machine
# (virtual environment, Python dependencies, Debian's chromium for browser tests), then runs.
#   ./dev.sh dashboard   start the dashboard on http://127.0.0.1:8501
#   ./dev.sh test        check the import contracts (lint-imports), then run the whole test suite
#                        (browser tests included) in 4 pytest-xdist workers
#                        (GPTUNER_TEST_WORKERS=N to change; -n N or -n 0 given to it wins)
set -euo pipefail
cd "$(dirname "$0")"

VENV=.venv
PY=${PYTHON:-python3}

need_python() {
  if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
    echo "dev.sh: error: Python >= 3.10 is required (found: $("$PY" --version 2>&1 || echo none)); set PYTHON=/path/to/python3.x" >&2
    exit 2
  fi
}

setup_python() {
  need_python
  if [ ! -x "$VENV/bin/python" ]; then
    echo "dev.sh: creating $VENV"
    "$PY" -m venv "$VENV"
  fi
  local stamp="$VENV/.gptuner-deps" want
  want=$(sha256sum pyproject.toml dev.sh | sha256sum | cut -c1-16)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "dev.sh: installing dependencies into $VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e '.[dev]'
    # PyTorch (CPU) for the torch.compile backend; pinned so pip takes the CPU build. Optional:
    # without it the torch backend's tests are skipped with the reason printed.
    if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
      "$VENV/bin/python" -m pip install -q 'torch==2.13.0' \
        || echo "dev.sh: note: torch==2.13.0 could not be installed; torch backend tests will be skipped"
    fi
    echo "$want" > "$stamp"
  fi
}

setup_browser() {
  if [ ! -x /usr/bin/chromium ]; then
    echo "dev.sh: installing Debian's chromium for the browser tests"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
  fi
}

case "${1:-}" in
  dashboard)
    setup_python
    # the pages live in app_pages/: a pages/ folder left by an older checkout (git keeps its
    # ignored __pycache__) would make Streamlit treat the app as a legacy multipage app
    if [ -d pages ] && [ -z "$(find pages -name '*.py' -print -quit)" ]; then rm -rf pages; fi
    exec "$VENV/bin/python" -m streamlit run serve.py \
      --server.address 127.0.0.1 --server.port "${PORT:-8501}" --server.headless true
    ;;
  test)
    shift
    setup_python
    setup_browser
    # The package's layers, backends independent of strategies, no import circle
    # (pyproject.toml's [tool.importlinter]; a few seconds): a new violation stops here.
    "$VENV/bin/lint-imports" --no-cache
    # Much of the suite waits (on tuner processes, servers, browsers): 4 workers overlap that on
    # 2 cores. A test file is one unit of work, files sharing a real study one unit with it
    # (tests/conftest.py). A -n, --dist or -p no:xdist of the caller replaces these defaults.
    parallel=(-n "${GPTUNER_TEST_WORKERS:-4}")
    for arg in "$@"; do
      case "$arg" in -n|-n*|--numprocesses*|--dist*|no:xdist) parallel=() ;; esac
    done
    exec "$VENV/bin/python" -m pytest ${parallel[@]+"${parallel[@]}"} "$@"
    ;;
  *)
    echo "usage: ./dev.sh dashboard | ./dev.sh test [pytest args]" >&2
    exit 2
    ;;
esac
