"""The dashboard's workspace folder: one subfolder per study, uploads, bundled samples.

No streamlit here. The workspace is ``$GPTUNER_WORKSPACE`` (default ``./workspace``).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from gptuner_core.errors import DatasetError
from gptuner_core.errors import GptunerError


ENV_VAR = "GPTUNER_WORKSPACE"
UPLOADS = "_uploads"
#: Largest accepted upload in MB (also the file_uploader limit and server.maxUploadSize).
MAX_UPLOAD_MB = 50
ASSETS = Path(__file__).resolve().parents[2] / "assets"
_NAME_RE = re.compile(r"[^A-Za-z0-9._-]+")


class UploadError(GptunerError, ValueError):
    """An uploaded file is not what the form expects (type, size, content)."""


def workspace_dir() -> Path:
    """The workspace folder (created when missing)."""
    path = Path(os.environ.get(ENV_VAR) or "workspace").expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def study_dirs(workspace: Path) -> list[Path]:
    """Study folders (those holding a ``study.sqlite``), most recently changed first."""
    found = [p for p in workspace.iterdir() if p.is_dir() and (p / "study.sqlite").is_file()]

    def changed(p: Path) -> float:
        wal = p / "study.sqlite-wal"
        return max((p / "study.sqlite").stat().st_mtime, wal.stat().st_mtime if wal.exists() else 0)

    return sorted(found, key=changed, reverse=True)


def safe_name(text: str, fallback: str = "study") -> str:
    """A folder/file name made of letters, digits, ``.``, ``_`` and ``-``: accented letters
    become their plain forms (``Ü`` -> ``U``), other characters and runs of dots a ``-``."""
    import unicodedata

    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    name = re.sub(r"-{2,}", "-", _NAME_RE.sub("-", re.sub(r"\.{2,}", "-", plain.strip())))
    name = name.strip("-.")
    return name[:80] or fallback


def new_study_dir(workspace: Path, label: str) -> Path:
    """A fresh, not yet existing study folder named ``<label>-<YYYYmmdd-HHMMSS>``."""
    base = f"{safe_name(label)}-{time.strftime('%Y%m%d-%H%M%S')}"
    path = workspace / base
    i = 1
    while path.exists():
        path = workspace / f"{base}-{i}"
        i += 1
    return path


#: model files the torch backend takes: a Python file with a ``factory`` (runs code) or a
#: ``torch.export`` program
TORCH_SUFFIXES = (".py", ".pt2")
MODEL_SUFFIXES = (".onnx", *TORCH_SUFFIXES)
FACTORY = "factory"


def model_file(model: str | Path) -> Path:
    """The file behind a model reference: ``x.py:factory`` -> ``x.py``; others unchanged."""
    text = str(model)
    head, sep, tail = text.rpartition(":")
    if sep and head.endswith(".py") and tail and "/" not in tail:
        return Path(head)
    return Path(text)


def is_torch_model(model: str | Path) -> bool:
    """Whether a model reference is for the torch backend (``.py`` factory or ``.pt2``)."""
    return model_file(model).suffix.lower() in TORCH_SUFFIXES


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    """A bundled sample model with its evaluation set: ``assets/<name>.onnx`` + ``_eval.npz``
    (any ONNX backend), or the torch sample ``assets/torch_digits_cnn.py:factory``."""

    name: str
    model: str
    dataset: Path | None
    backend: str | None = None  # the only backend that takes it (None: the ONNX backends)

    @property
    def file(self) -> Path:
        return model_file(self.model)

    def fits(self, backend: str) -> bool:
        """Whether ``backend`` can take this sample's model."""
        return backend == self.backend if self.backend else backend != "torch"


def bundled_samples(assets: Path = ASSETS) -> list[Sample]:
    """The ONNX models shipped in ``assets/`` with their ``<stem>_eval.npz`` when present, then
    the torch sample (``torch_digits_cnn.py:factory`` + ``torch_digits_eval.npz``)."""
    if not assets.is_dir():
        return []
    out = []
    for model in sorted(assets.glob("*.onnx")):
        ds = model.with_name(f"{model.stem}_eval.npz")
        out.append(Sample(name=model.stem, model=str(model), dataset=ds if ds.is_file() else None))
    torch_sample = assets / "torch_digits_cnn.py"
    if torch_sample.is_file():
        ds = assets / "torch_digits_eval.npz"
        out.append(Sample(name="torch_digits_cnn (torch)", model=f"{torch_sample}:{FACTORY}",
                          dataset=ds if ds.is_file() else None, backend="torch"))
    return out


def save_upload(workspace: Path, filename: str, data: bytes, *, kind: str) -> Path:
    """Validate and store an uploaded model (``kind="model"``) or dataset (``"dataset"``).

    Raises:
        UploadError: too large, wrong extension, or content that is not ONNX / npz.
    """
    size_mb = len(data) / (1024 * 1024)
    if size_mb > MAX_UPLOAD_MB:
        msg = f"upload '{filename}' is too large: {size_mb:.1f} MB (limit {MAX_UPLOAD_MB} MB)"
        raise UploadError(msg)
    suffix = Path(filename).suffix.lower()
    expected = {"model": MODEL_SUFFIXES, "dataset": (".npz",), "knobs": (".json",),
                "expression": (".txt",)}[kind]
    if suffix not in expected:
        what = " or ".join(expected)
        msg = f"upload '{filename}': expected a {what} file for the {kind} (got '{suffix or 'no extension'}')"
        raise UploadError(msg)
    if suffix == ".onnx":
        check_onnx_bytes(filename, data)
    elif suffix == ".py":
        check_factory_source(filename, data)
    elif suffix == ".pt2":
        check_pt2_bytes(filename, data)
    elif kind == "dataset":
        check_npz_bytes(filename, data)
    folder = workspace / UPLOADS
    folder.mkdir(parents=True, exist_ok=True)
    import hashlib

    digest = hashlib.sha256(data).hexdigest()[:12]
    path = folder / f"{safe_name(Path(filename).stem, kind)}-{digest}{suffix}"
    if not path.exists():
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path


def check_onnx_bytes(filename: str, data: bytes) -> list[str]:
    """Parse ONNX bytes; return the graph's real input names (initializers excluded)."""
    import onnx

    try:
        model = onnx.load_model_from_string(data)
    except Exception as exc:  # noqa: BLE001 - any decode failure is a user error here
        msg = f"upload '{filename}' is not a valid ONNX model (protobuf decode failed: {type(exc).__name__})"
        raise UploadError(msg) from None
    if not model.graph.node:
        msg = f"upload '{filename}' is not a usable ONNX model (expected a graph with nodes, got none)"
        raise UploadError(msg)
    inits = {i.name for i in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in inits]


def check_factory_source(filename: str, data: bytes) -> None:
    """Check a Python model file *without running it*: it parses and defines ``factory()``.

    Raises:
        UploadError: not UTF-8 text, a syntax error, or no top-level ``def factory``.
    """
    import ast

    try:
        tree = ast.parse(data.decode("utf-8"), filename=filename)
    except UnicodeDecodeError:
        msg = f"upload '{filename}' is not a Python source file (expected UTF-8 text, got binary data)"
        raise UploadError(msg) from None
    except SyntaxError as exc:
        msg = f"upload '{filename}' is not valid Python (line {exc.lineno}: {exc.msg})"
        raise UploadError(msg) from None
    found = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if FACTORY not in found:
        msg = (f"upload '{filename}': expected a top-level function {FACTORY}() returning "
               f"(module, example_inputs) (found {', '.join(found) or 'no functions'})")
        raise UploadError(msg)


def check_pt2_bytes(filename: str, data: bytes) -> None:
    """A ``.pt2`` is the zip archive ``torch.export.save`` writes (checked without loading it)."""
    import io
    import zipfile

    if not zipfile.is_zipfile(io.BytesIO(data)):
        msg = (f"upload '{filename}' is not a torch.export program (expected the zip archive "
               "torch.export.save writes, got other bytes)")
        raise UploadError(msg)


def check_npz_bytes(filename: str, data: bytes) -> list[str]:
    """Open npz bytes; return the array names. One line naming the real problem otherwise:
    an empty file, bytes that are not a zip of ``.npy`` arrays, an unreadable or pickled
    (object) array, or an input array holding only NaN values."""
    import io
    import zipfile

    import numpy as np

    if not data:
        msg = f"upload '{filename}' is empty (0 bytes): expected a .npz archive of arrays"
        raise UploadError(msg)
    if not zipfile.is_zipfile(io.BytesIO(data)):
        got = "text" if _looks_like_text(data) else "other bytes"
        msg = (f"upload '{filename}' is not a .npz archive (expected the zip of .npy arrays that "
               f"numpy.savez writes, got {got})")
        raise UploadError(msg)
    names: list[str] = []
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            for name in npz.files:
                _check_array(filename, name, npz[name])
                names.append(name)
    except UploadError:
        raise
    except ValueError as exc:
        what = ("holds pickled (object) arrays, which are never loaded"
                if "allow_pickle" in str(exc) else f"has an unreadable array ({exc})")
        msg = f"upload '{filename}' {what}: expected numeric arrays"
        raise UploadError(msg) from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        msg = f"upload '{filename}' is a damaged .npz archive ({type(exc).__name__}: {exc})"
        raise UploadError(msg) from None
    if not names:
        msg = f"upload '{filename}' holds no arrays: expected one array per model input"
        raise UploadError(msg)
    return names


def _looks_like_text(data: bytes) -> bool:
    try:
        data[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _check_array(filename: str, name: str, array) -> None:  # noqa: ANN001 - a numpy array
    import numpy as np

    if array.dtype.kind == "f" and array.size and bool(np.isnan(array).all()):
        msg = (f"upload '{filename}': array '{name}' holds only NaN values "
               f"(expected real numbers, {array.size:,} NaN)")
        raise UploadError(msg)


def model_input_names(model: Path) -> list[str]:
    """Input names of an ONNX model file (initializers excluded)."""
    return check_onnx_bytes(model.name, model.read_bytes())


def check_dataset_matches(model: Path, dataset: Path) -> None:
    """Raise DatasetError unless the npz has one array per model input (``labels`` optional)."""
    import numpy as np

    inputs = model_input_names(model)
    try:
        with np.load(dataset, allow_pickle=False) as npz:
            names = list(npz.files)
    except (OSError, ValueError) as exc:
        msg = f"dataset '{dataset.name}' cannot be read as .npz ({exc})"
        raise DatasetError(msg) from None
    missing = [n for n in inputs if n not in names]
    if missing:
        msg = (
            f"dataset '{dataset.name}' does not match model '{model.name}': missing input array(s) "
            f"{missing} (expected {inputs} + optional 'labels', got {names})"
        )
        raise DatasetError(msg)


def pid_alive(pid: int | None) -> bool | None:
    """Whether process ``pid`` exists (``None`` when unknown). Zombies count as gone."""
    from gptuner_core.engine.process.launch import pid_alive as alive

    return None if not pid else alive(int(pid))


def dataset_has_labels(dataset: Path) -> bool:
    """Whether an ``.npz`` dataset holds a ``labels`` array (then top1 is the default metric)."""
    import zipfile

    try:
        with zipfile.ZipFile(dataset) as zf:
            return any(n in ("labels", "labels.npy") for n in zf.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingLaunch:
    """A study folder a launch created whose tuner has not written a store: starting or failed."""

    name: str
    alive: bool
    cause: str
    log: str


def pending_launches(workspace: Path) -> list[PendingLaunch]:
    """Folders with a launch (``launch.json``, ``study.json`` or ``tuner.log``) but no
    ``study.sqlite``: a tuner
    that is starting, or one that failed before creating its store (with its last log line)."""
    from gptuner_core.engine.process.launch import is_running

    out = []
    for p in sorted(workspace.iterdir()):
        if not p.is_dir() or (p / "study.sqlite").is_file() or p.name == UPLOADS:
            continue
        if not any((p / f).is_file() for f in ("launch.json", "study.json", "tuner.log")):
            continue
        from gptuner_core.storage.paths import inside

        try:  # a log linked out of the folder is not read
            log = (p / "tuner.log").read_text(encoding="utf-8", errors="replace")[-4000:] \
                if inside(p / "tuner.log", p) else ""
        except OSError:
            log = ""
        lines = [line for line in log.splitlines() if line.strip()]
        alive = bool(is_running(p))
        cause = "starting" if alive else (lines[-1] if lines else "the tuner exited without a word")
        out.append(PendingLaunch(name=p.name, alive=alive, cause=cause, log=log))
    return out
