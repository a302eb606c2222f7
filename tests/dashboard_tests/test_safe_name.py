"""Issue 39 item 15: a study name's letters survive as their plain forms, and no ``..`` is kept
(``Ünïcode test/../x name`` became ``n-code-test-..-x-name``)."""

from __future__ import annotations

import pytest

from gptuner_core.dashboard.workspace import safe_name


@pytest.mark.parametrize(("text", "name"), [
    ("Ünïcode test/../x name", "Unicode-test-x-name"),
    ("../../etc/passwd", "etc-passwd"),
    ("résumé v1.2", "resume-v1.2"),
    ("a..b", "a-b"),
    ("日本語", "study"),
    ("  plain_name-1 ", "plain_name-1"),
])
def test_safe_name_keeps_letters_and_drops_dot_runs(text: str, name: str) -> None:
    assert safe_name(text) == name
