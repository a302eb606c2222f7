"""Spawned children keep a bytecode cache where the interpreter writes none beside the sources.

Seen on the lent H200's image, which runs Python with PYTHONDONTWRITEBYTECODE: every fresh
measuring process compiled torch's and Inductor's sources again (16.8 s to import them there,
4.4 s from a bytecode cache), and a torch study re-measures in a fresh process per round.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


PARENT = """
import json, sys
from pathlib import Path
from gptuner_core.engine.process.isolation import run_isolated
work = Path(sys.argv[1])
work.mkdir()
out = run_isolated("bytecode_target:run", {"backend": "torch", "backend_options": {"device": "cuda:0"}},
                   work, timeouts={"start": 60, "build": 60, "measure": 60, "profile": 60},
                   start_method="spawn")
print(json.dumps({"status": out.status, "result": out.result, "error": out.error}))
"""

TARGET = """
import sys
def run(job, workdir, phase):
    import heavy_module  # stands in for torch: imported fresh by every measuring process
    return {"state": "complete", "flag": bool(sys.flags.dont_write_bytecode),
            "prefix": sys.pycache_prefix}
"""


def _run_parent(tmp_path: Path, name: str, env: dict[str, str]) -> dict:
    proc = subprocess.run(
        [sys.executable, "-B", "-c", PARENT, str(tmp_path / name)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    src = tmp_path / "src"
    if not src.exists():
        src.mkdir()
        (src / "bytecode_target.py").write_text(TARGET)
        (src / "heavy_module.py").write_text("VALUE = 1\n")
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "GPTUNER_PYCACHE")}
    env.update(PYTHONPATH=os.pathsep.join([str(root), str(src)]), XDG_CACHE_HOME=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def test_a_spawned_child_caches_its_imports_outside_the_sources(tmp_path: Path) -> None:
    out = _run_parent(tmp_path, "w1", _env(tmp_path))
    assert out["status"] == "ok", out
    prefix = tmp_path / "cache" / "gptuner" / "pycache"
    assert out["result"]["prefix"] == str(prefix)
    cached = list(prefix.rglob("heavy_module*.pyc"))
    assert cached, f"no bytecode of the child's imports under {prefix}"
    assert not list((tmp_path / "src").rglob("*.pyc")), "bytecode written beside the sources"
    # a second fresh child reads it (the file is not rewritten)
    stamp = cached[0].stat().st_mtime_ns
    assert _run_parent(tmp_path, "w2", _env(tmp_path))["status"] == "ok"
    assert cached[0].stat().st_mtime_ns == stamp


def test_the_user_can_turn_it_off(tmp_path: Path) -> None:
    out = _run_parent(tmp_path, "w1", _env(tmp_path, GPTUNER_PYCACHE="off"))
    assert out["status"] == "ok", out
    assert out["result"]["flag"] is True and out["result"]["prefix"] is None
    assert not list(tmp_path.rglob("heavy_module*.pyc"))
