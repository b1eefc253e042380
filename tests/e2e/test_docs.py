"""Every Python code block in the docs and the README runs, so the docs cannot rot.

* A fenced ``python`` block is executed; the blocks of one page run top to bottom in one
  namespace, like a reader following the page.
* A fenced ``python test`` block is a whole test module: it runs in a real pytest session
  (``pytester``) and every test in it must pass.
* Every page has at least one, except the API reference of docs/reference/, which
  mkdocstrings renders from the docstrings.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
REFERENCE = ROOT / "docs" / "reference"
FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def _blocks(page: Path) -> list[tuple[str, str, int]]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 2
        found.append((match.group("info").strip(), match.group("body"), line))
    return found


def _script_pages() -> list[Path]:
    return [p for p in PAGES if any(info == "python" for info, _, _ in _blocks(p))]


def _test_blocks() -> list[tuple[Path, str, int]]:
    return [
        (page, body, line)
        for page in PAGES
        for info, body, line in _blocks(page)
        if info == "python test"
    ]


@pytest.fixture
def provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The docs construct SDK clients, which need a key; the fake model never checks it."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-docs")


def test_every_page_has_runnable_examples() -> None:
    # The API reference (docs/reference/) is rendered from the docstrings by mkdocstrings:
    # its pages hold ``:::`` directives, not prose with examples.
    prose = [p for p in PAGES if REFERENCE not in p.parents]
    missing = [p.name for p in prose if not any(i.startswith("python") for i, _, _ in _blocks(p))]

    assert missing == []


@pytest.mark.usefixtures("provider_keys")
@pytest.mark.parametrize("page", _script_pages(), ids=lambda p: p.name)
def test_python_blocks_run(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each page runs as a real module, as a reader's script would (freezegun, for one,
    # patches the names a module imported).
    module = types.ModuleType(f"docs_{page.stem}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for info, body, line in _blocks(page):
        if info != "python":
            continue
        code = compile("\n" * (line - 1) + body, str(page), "exec")
        exec(code, module.__dict__)


@pytest.mark.usefixtures("provider_keys")
@pytest.mark.parametrize(
    ("page", "body", "line"),
    _test_blocks(),
    ids=[f"{page.name}:{line}" for page, _, line in _test_blocks()],
)
def test_test_blocks_pass(
    agent_pytester: pytest.Pytester, page: Path, body: str, line: int
) -> None:
    agent_pytester.makepyfile(**{f"test_{page.stem}_{line}": body})

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    outcomes = result.parseoutcomes()
    assert result.ret == 0, result.stdout.str()
    assert outcomes.get("passed", 0) >= 1
