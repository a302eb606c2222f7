#!/usr/bin/env python3
"""Extract the trtexec facts gptuner's driver depends on from NVIDIA/TensorRT sources, as JSON.

Usage (regenerates ``tests/data/trt_trtexec_facts.json``)::

    python tests/data/trt_facts_extract.py /path/to/TensorRT [COMMIT] > tests/data/trt_trtexec_facts.json

``/path/to/TensorRT`` is a clone (work tree) or a bare git directory; ``COMMIT`` defaults to HEAD.
Every fact is read from the source text (string literals, key assignments, message templates), with
the file and line it came from, so a new TensorRT release shows up as a diff of the JSON. The
extract fails loudly when an expected anchor is missing instead of writing a partial file.
In 11.4 the tuner sources moved to ``samples/trtexecCommon/``; both layouts are searched.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path


LAYOUTS = ("samples/common", "samples/trtexecCommon")
FILES = {
    "options": "sampleOptions.cpp",
    "tuning": "sampleTuning.cpp",
    "utils": "sampleUtils.cpp",
    "utils_h": "sampleUtils.h",
    "inference": "sampleInference.cpp",
    "engines": "sampleEngines.cpp",
    "logging": "logging.h",
}
TRTEXEC = "samples/trtexec/trtexec.cpp"
FILELOCK = "shared/utils/fileLock.cpp"
COMMON_H = "samples/common/common.h"

#: message templates the driver and fake_trtexec.py reproduce; (name, file key, literal text)
MESSAGES = (
    ("child_signal", "trtexec", '"child killed by signal "'),
    ("child_signal_name", "trtexec", "strsignal(sig)"),
    ("child_status", "trtexec", '"child exited with status "'),
    ("missing_result", "trtexec", '"missing tuning result file "'),
    ("missing_result_tail", "trtexec", '" (child likely crashed before writing)"'),
    ("parse_result", "trtexec", '"failed to parse tuning result JSON: "'),
    ("iteration_failed", "trtexec", '"Iteration ["'),
    ("tuning_iteration", "trtexec", '"Tuning iteration ["'),
    ("best_iteration", "trtexec", '"Best iteration: "'),
    ("summary", "trtexec", '"Tuning summary: "'),
    ("none_succeeded", "trtexec", '"No tuning iteration succeeded; no engine written."'),
    ("accuracy_failed", "trtexec", '"Accuracy validation FAILED: one or more tensors exceeded the threshold."'),
    ("continue_only", "trtexec", '"--continue requires exactly --tuningCacheFile=<path>; "'),
    ("using_route", "engines", '"Using tuning build route: "'),
    ("route_rejected", "engines", '"IBuilderConfig::setBuildRoute failed for: "'),
    ("accuracy_loss", "inference", '"Accuracy loss for tensor "'),
    ("accuracy_fail_suffix", "inference", '" [FAIL: >= threshold "'),
    ("task_banner", "logging", "&&&& TASK_BEGIN [iter=0] BuildRoute = '"),
)


class Source:
    def __init__(self, root: Path, commit: str) -> None:
        self.root, self.commit = root, commit
        self.bare = not (root / "samples").is_dir()
        self.sha = self._git("rev-parse", commit).strip() if (root / ".git").exists() or self.bare else commit

    def _git(self, *args: str) -> str:
        flag = ["--git-dir", str(self.root)] if self.bare else ["-C", str(self.root)]
        return subprocess.run(["git", *flag, *args], capture_output=True, text=True, check=True).stdout

    def read(self, path: str) -> str | None:
        if self.bare or self.commit != "HEAD":
            try:
                return self._git("show", f"{self.commit}:{path}")
            except subprocess.CalledProcessError:
                return None
        p = self.root / path
        return p.read_text(encoding="utf-8", errors="replace") if p.is_file() else None

    def find(self, name: str) -> tuple[str, str]:
        for folder in LAYOUTS:
            text = self.read(f"{folder}/{name}")
            if text is not None:
                return f"{folder}/{name}", text
        msg = f"{name} not found under {LAYOUTS}"
        raise SystemExit(msg)


def line_of(text: str, needle: str) -> int:
    i = text.find(needle)
    if i < 0:
        msg = f"anchor {needle!r} not found"
        raise SystemExit(msg)
    return text.count("\n", 0, i) + 1


def block(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i : text.index(end, i)]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    src = Source(Path(argv[0]), argv[1] if len(argv) > 1 else "HEAD")
    files = {key: src.find(name) for key, name in FILES.items()}
    trtexec = (TRTEXEC, src.read(TRTEXEC) or "")
    files["trtexec"] = trtexec
    opt_path, opt = files["options"]
    flags = sorted({m.group(1).rstrip("=") for m in re.finditer(r'"(--[A-Za-z][A-Za-z0-9]*=?)"', opt)})
    tuning_path, tuning = files["tuning"]
    strip = re.findall(r'"(--[A-Za-z]+)"', block(tuning, "kTUNING_STRIP_PREFIXES", "};"))
    utils_path, utils = files["utils"]
    header_keys = re.findall(r'header\["([a-z_]+)"\]\s*=', block(utils, "void writeTuningCacheHeader", "\n}\n"))
    h_path, utils_h = files["utils_h"]
    row_keys = re.findall(r'constexpr char const\* k\w+ = "([a-z_]+)";', block(utils_h, "namespace tuningCache", "} // namespace tuningCache"))
    display = dict(re.findall(r"case AccuracyValidationAlgorithm::(k\w+): return \"(\w+)\";", utils_h))
    cli = dict(re.findall(r'\{"(\w+)", AccuracyValidationAlgorithm::(k\w+)\}', opt))
    result_writer = block(trtexec[1], "if (!options.tuning.tuningResultFile.empty())", "out << j.dump(2)")
    result_keys = re.findall(r'j\["([a-z_]+)"\]', result_writer)
    messages = {}
    for name, key, literal in MESSAGES:
        path, text = files[key]
        messages[name] = {"text": literal.strip('"'), "source": f"{path}:{line_of(text, literal)}"}
    lock = src.read(FILELOCK) or ""
    common_h = src.read(COMMON_H) or ""
    result_line = line_of(trtexec[1], 'j["gpu_time_ms"]')
    facts = {
        "about": "trtexec facts gptuner's trtexec driver and tests/data/fake_trtexec.py depend on; "
        "regenerate with tests/data/trt_facts_extract.py",
        "repository": "https://github.com/NVIDIA/TensorRT",
        "commit": src.sha,
        "flags": {"source": opt_path, "names": flags},
        "tuning_only_flags": {"source": f"{tuning_path}:{line_of(tuning, 'kTUNING_STRIP_PREFIXES')}", "names": strip},
        "child_appended_flags": ["--setBuildRoute", "--saveEngine", "--tuningResultFile"],
        "cache_header_keys": {"source": f"{utils_path}:{line_of(utils, 'void writeTuningCacheHeader')}", "keys": header_keys},
        "cache_row_keys": {"source": f"{h_path}:{line_of(utils_h, 'namespace tuningCache')}", "keys": row_keys},
        "cache_atol_rtol_type": "float (C++), promoted to double by nlohmann: 1e-5 is written 9.999999747378752e-06",
        "result_file_keys": {"source": f"{TRTEXEC}:{result_line}", "keys": result_keys,
                             "indent": 2, "reader_defaults": {"gpu_time_ms": 0.0, "accuracy_failed": False}},
        "accuracy_algorithms": {"source": opt_path, "cli_to_enum": cli, "enum_to_display": display},
        "messages": messages,
        "continue": {
            "source": f"{TRTEXEC}:{line_of(trtexec[1], 'bool reconstructArgvForContinue')}",
            "allowed_args": ["--continue", "--tuningCacheFile=<path>"],
            "skip": "count of non-empty lines after the header, phase-1 indices in trtexec's expansion order",
            "argv": "header argv[1:] minus --tuneBuildRoutes/--tuneBuildRouteFile/--continue/--tuningCacheFile, "
                    "then --tuneBuildRoutes=<tuning_expr> --tuningCacheFile=<path>",
            "reconstruct_source": f"{utils_path}:{line_of(utils, 'reconstructArgvFromCacheHeader(')}",
        },
        "timing_cache_lock": {
            "source": FILELOCK,
            "lock_file": "<file>.lock" if '".lock"' in lock else None,
            "open_mode": "wb+" if '"wb+"' in lock else None,
            "call": "lockf(F_LOCK)" if "lockf(mDescriptor, F_LOCK, 0)" in lock else None,
        },
        "raw_output_files": {
            "flag": "--dumpRawBindingsToFile",
            "name": "<tensor>.<input|output>.<d0.d1...>.<dtype>.raw, through genFilenameSafeString",
            "safe_chars": "alnum and ._-," if 'kALLOWED{"._-,"}' in common_h else None,
            "source": f"{files['inference'][0]}:{line_of(files['inference'][1], 'fileNameStream << name')}",
        },
        "help_build_route": {
            "source": f"{TRTEXEC}:{line_of(trtexec[1], 'printBuildRouteHelp')}",
            "unfiltered": "prints the all_build_routes string verbatim",
        },
    }
    json.dump(facts, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
