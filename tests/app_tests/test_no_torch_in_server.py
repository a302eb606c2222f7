"""Heavy imports never on the page path (issue 26): the dashboard's server process does not
import torch, not when New run describes the bundled torch sample, nor when a torch study is
opened on every page (knobs, input specs, environment and repro come from a child process)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.app_tests.conftest import APP


pytest.importorskip("torch")
pytestmark = pytest.mark.torch

SCRIPT = textwrap.dedent("""
    import json, os, shutil, sys, tempfile
    from streamlit.testing.v1 import AppTest

    app, study = sys.argv[1], sys.argv[2]
    ws = tempfile.mkdtemp()
    shutil.copytree(study, os.path.join(ws, "torch_h200"))
    os.environ["GPTUNER_WORKSPACE"] = ws
    seen, problems = {}, []
    at = AppTest.from_file(app, default_timeout=300).run()
    at.switch_page("app_pages/2_New_run.py").run()
    at.selectbox(key="nr_sample").set_value("torch_digits_cnn (torch)").run()
    at.checkbox(key="nr_use_eps").check().run()
    code = " ".join(c.value for c in at.code)
    if "-torch:precision=[fp32|bf16]" not in code:
        problems.append("New run did not offer the torch knobs: " + code[:300])
    seen["New run (torch sample)"] = "torch" in sys.modules
    for page in sorted(os.listdir(os.path.join(os.path.dirname(app), "app_pages"))):
        at.switch_page("app_pages/" + page).run()
        if at.exception:
            problems.append(page + ": " + str(at.exception))
        if page.startswith("5_") and not any("compile_fx" in c.value for c in at.code):
            problems.append("Route trace shows no torch repro")
        seen[page] = "torch" in sys.modules
    print(json.dumps({"seen": seen, "problems": problems}))
""")


@pytest.mark.slow
def test_no_page_imports_torch() -> None:
    study = APP.parent / "examples" / "studies" / "torch_h200"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(APP), str(study)],  # noqa: S603
                          capture_output=True, text=True, timeout=900, check=False, cwd=APP.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert not result["problems"], result["problems"]
    assert not any(result["seen"].values()), result["seen"]
