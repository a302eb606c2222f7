"""The real TensorRT bindings and cuda-bindings wheels, importable on a machine without TensorRT.

* wheels come from PyPI through pip (``pip download --no-deps --only-binary=:all:``) into a cache
  outside the repository: ``$GPTUNER_WHEEL_CACHE`` or ``~/.cache/gptuner/trt-wheels``; offline,
  the caller skips with pip's reason;
* each wheel is unpacked once under ``<cache>/unpacked/<wheel>``;
* ``tensorrt_bindings/tensorrt.so`` needs ``libnvinfer.so.11``, ``libnvonnxparser.so.11`` and
  ``libnvinfer_plugin.so.11``, which cannot be installed here; its module init calls none of
  their functions, so *empty* libraries with those sonames that define the TensorRT symbols the
  extension imports (``nm -D --undefined-only``) let ``import tensorrt_bindings`` succeed. They are
  built with gcc at test time and cached under ``<cache>/stand-ins/<hash>``. Nothing can be built
  or run that way: it reveals names and signatures only.

Test processes (pytest-xdist workers) share the cache: each download, unpacking and stand-in build
holds an ``flock`` on ``<cache>/.lock`` and looks again once it has it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path


TRT_WHEELS: tuple[tuple[str, str], ...] = (
    ("tensorrt-cu13-bindings", "11.1.0.106"),
    ("tensorrt-cu13-bindings", "11.2.1.2"),
    ("tensorrt-cu13-bindings", "11.3.0.99"),
    ("tensorrt-cu13-bindings", "11.4.0.106"),
    ("tensorrt-cu12-bindings", "11.4.0.106"),
)
TRT_TOO_OLD = ("tensorrt-cu13-bindings", "11.0.0.114")
CUDA_WHEELS: tuple[tuple[str, str], ...] = (("cuda-bindings", "12.9.0"), ("cuda-bindings", "13.0.0"))


class Unavailable(Exception):
    """A wheel or a tool is not available here; the message is the skip reason."""


def cache_dir() -> Path:
    base = os.environ.get("GPTUNER_WHEEL_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "gptuner" / "trt-wheels"


@contextlib.contextmanager
def _cache_locked():  # noqa: ANN202
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _wheel_file(folder: Path, dist: str, version: str) -> Path | None:
    stem = dist.replace("-", "_")
    found = sorted(folder.glob(f"{stem}-{version}-*.whl"))
    return found[0] if found else None


def wheel(dist: str, version: str) -> Path:
    """The wheel file, downloaded by pip on first use."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    found = _wheel_file(folder, dist, version)
    if found is not None:
        return found
    with _cache_locked():
        return _wheel_file(folder, dist, version) or _download(folder, dist, version)


def _download(folder: Path, dist: str, version: str) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "-q", "-d", str(folder), f"{dist}=={version}"]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        msg = f"cannot download {dist}=={version} with pip ({exc}); offline?"
        raise Unavailable(msg) from None
    found = _wheel_file(folder, dist, version)
    if res.returncode != 0 or found is None:
        tail = " ".join((res.stderr or res.stdout).split())[-300:]
        msg = f"cannot download {dist}=={version} from PyPI (offline?): {tail}"
        raise Unavailable(msg)
    return found


def unpacked(dist: str, version: str) -> Path:
    """Folder holding the unpacked wheel (put it on PYTHONPATH)."""
    whl = wheel(dist, version)
    target = cache_dir() / "unpacked" / whl.stem
    if (target / ".done").exists():
        return target
    with _cache_locked():
        if (target / ".done").exists():
            return target
        tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        with zipfile.ZipFile(whl) as z:
            z.extractall(tmp)
        (tmp / ".done").write_text(whl.name)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    return target


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        msg = f"'{name}' is not installed (needed to build stand-in TensorRT libraries)"
        raise Unavailable(msg)
    return path


def stand_ins(extension: Path) -> Path:
    """A folder of empty ``libnv*.so.11`` with the sonames and symbols ``extension`` needs."""
    readelf = subprocess.run([_tool("readelf"), "-d", str(extension)], capture_output=True, text=True, check=True).stdout
    sonames = sorted(set(re.findall(r"\(NEEDED\)\s+Shared library: \[(libnv[^\]]+)\]", readelf)))
    nm = subprocess.run([_tool("nm"), "-D", "--undefined-only", str(extension)], capture_output=True, text=True, check=True).stdout
    symbols = sorted({line.split()[-1] for line in nm.splitlines() if line.strip() and "@" not in line.split()[-1]
                      and not line.split()[-1].startswith(("Py", "_Py", "_ITM", "__gmon", "__cxa", "_Jv"))})
    key = hashlib.sha256(("\n".join(sonames + symbols)).encode()).hexdigest()[:16]
    folder = cache_dir() / "stand-ins" / key
    if all((folder / s).exists() for s in sonames):
        return folder
    with _cache_locked():
        if not all((folder / s).exists() for s in sonames):
            _build_stand_ins(folder, sonames, symbols)
    return folder


def _build_stand_ins(folder: Path, sonames: list[str], symbols: list[str]) -> None:
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        msg = "no C compiler (gcc) to build the stand-in TensorRT libraries"
        raise Unavailable(msg)
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "stand_in.c"
    src.write_text("".join(f"void {s}(void) {{}}\n" for s in symbols))
    for soname in sonames:
        out = folder / f".{soname}.{os.getpid()}.tmp"
        subprocess.run([gcc, "-shared", "-fPIC", "-o", str(out), f"-Wl,-soname,{soname}", str(src)], check=True)
        os.replace(out, folder / soname)


def trt_env(dist: str, version: str) -> dict[str, str]:
    """Environment under which ``import tensorrt_bindings`` loads this wheel's real module."""
    root = unpacked(dist, version)
    ext = next((root / "tensorrt_bindings").glob("tensorrt*.so"))
    libs = stand_ins(ext)
    return {**os.environ, "PYTHONPATH": str(root), "LD_LIBRARY_PATH": str(libs)}


def cuda_env(dist: str, version: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(unpacked(dist, version))}
