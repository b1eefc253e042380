"""The documentation site's configuration (mkdocs.yml) stays complete as pages are added.

* Every Markdown page under docs/ is in the nav (MkDocs builds a page left out of the nav
  but links it from nowhere), and every page the nav names exists.
* The API reference (docs/reference/index.md) documents every public name of the package,
  the names of ``PUBLIC`` in pytest_agentctx/_public.py, and no other; its testing page
  (docs/reference/testing.md) every name of ``pytest_agentctx.testing``, and no other.
* Every import the docs, the README and the examples write (``from pytest_agentctx... import
  ...``, ``import pytest_agentctx...``) is of a supported path, ``pytest_agentctx`` or
  ``pytest_agentctx.testing`` (docs/architecture.md, "What you may import"), and every name
  it imports is there.

``make docs`` builds the site itself (strict: any warning fails it).
"""

from __future__ import annotations

import re
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest
import yaml

import pytest_agentctx.testing
from pytest_agentctx._public import PUBLIC

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: The directive of mkdocstrings: ``::: dotted.name`` alone on a line.
DIRECTIVE = re.compile(r"^::: (\S+)\s*$", re.MULTILINE)
#: The import paths users may write (docs/architecture.md, "What you may import").
SUPPORTED = ("pytest_agentctx", "pytest_agentctx.testing")
#: ``from pytest_agentctx... import names`` (names in parentheses may span lines) and
#: ``import pytest_agentctx...``, in code or in prose.
FROM_IMPORT = re.compile(
    r"\bfrom\s+(pytest_agentctx[\w.]*)\s+import\s+(\([^)]*\)|[^\n`]*)", re.MULTILINE
)
PLAIN_IMPORT = re.compile(r"^\s*import\s+(pytest_agentctx[\w.]*)", re.MULTILINE)


def _config() -> dict[str, Any]:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    try:
        config = yaml.safe_load(text)
    except yaml.constructor.ConstructorError as error:
        pytest.fail(
            f"mkdocs.yml has a tag yaml.safe_load cannot read ({error.problem}); expected plain "
            "YAML: configure the plugin without the tag (a !!python/name tag has a string "
            "form in most plugins), then run make docs"
        )
    assert isinstance(config, dict), f"mkdocs.yml holds {type(config).__name__}, not a mapping"
    return config


def _nav_pages(entries: Any) -> list[str]:
    """The page paths of a nav: its entries are paths, or ``{title: path or sub-nav}``."""
    if isinstance(entries, str):
        return [] if entries.startswith(("http://", "https://")) else [entries]
    if isinstance(entries, list):
        return [page for entry in entries for page in _nav_pages(entry)]
    if isinstance(entries, dict):
        return [page for value in entries.values() for page in _nav_pages(value)]
    raise AssertionError(f"mkdocs.yml's nav has an entry {entries!r}: expected a path or a list")


def test_every_page_under_docs_is_in_the_nav() -> None:
    pages = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}

    missing = sorted(pages - set(_nav_pages(_config()["nav"])))

    assert missing == [], (
        f"docs/ pages not in mkdocs.yml's nav: {missing}; add each under the section it "
        "belongs to, then run make docs"
    )


def test_every_page_in_the_nav_exists() -> None:
    named = _nav_pages(_config()["nav"])

    absent = sorted(page for page in named if not (DOCS / page).is_file())

    assert absent == [], f"mkdocs.yml's nav names pages that docs/ lacks: {absent}"


def test_the_nav_names_each_page_once() -> None:
    named = _nav_pages(_config()["nav"])

    twice = sorted({page for page in named if named.count(page) > 1})

    assert twice == [], f"mkdocs.yml's nav names these pages more than once: {twice}"


def test_the_reference_documents_every_public_name() -> None:
    text = (DOCS / "reference" / "index.md").read_text(encoding="utf-8")
    documented = {name.removeprefix("pytest_agentctx.") for name in DIRECTIVE.findall(text)}

    public = set(PUBLIC)

    assert sorted(public - documented) == [], (
        "public names (pytest_agentctx._public.PUBLIC) without a '::: pytest_agentctx.NAME' block "
        "in docs/reference/index.md: add one under their group, then run make docs"
    )
    assert sorted(documented - public) == [], (
        "docs/reference/index.md documents names that pytest_agentctx does not export"
    )


def _documented_files() -> list[Path]:
    """The files whose imports users copy: the docs, the README and the examples."""
    examples = [p for p in sorted((ROOT / "examples").rglob("*")) if p.suffix in {".py", ".md"}]
    return [*sorted(DOCS.rglob("*.md")), ROOT / "README.md", *examples]


def _documented_imports() -> list[tuple[str, str, list[str]]]:
    """Every import of the package the documented files write: (where, module, names)."""
    found = []
    for path in _documented_files():
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT).as_posix()
        for match in FROM_IMPORT.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            names = re.sub(r"#[^\n]*", "", match.group(2)).strip("() \n")
            imported = [n.split(" as ")[0].strip() for n in names.split(",") if n.strip()]
            found.append((f"{where}:{line}", match.group(1), imported))
        for match in PLAIN_IMPORT.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{where}:{line}", match.group(1), []))
    return found


def test_the_docs_import_only_the_supported_paths() -> None:
    found = _documented_imports()

    unsupported = sorted(
        f"{where}: {module}" for where, module, _ in found if module not in SUPPORTED
    )

    assert len(found) > 20  # the patterns still find the docs' imports
    assert unsupported == [], (
        "the docs teach internal import paths: import from pytest_agentctx or "
        "pytest_agentctx.testing (add a name to pytest_agentctx/testing.py's table if a "
        "reader needs it)"
    )


def test_every_name_the_docs_import_is_there() -> None:
    missing = sorted(
        f"{where}: {module}.{name}"
        for where, module, names in _documented_imports()
        if module in SUPPORTED
        for name in names
        if name != "*" and not hasattr(import_module(module), name)
    )

    assert missing == []


def test_the_testing_reference_documents_every_testing_name() -> None:
    text = (DOCS / "reference" / "testing.md").read_text(encoding="utf-8")
    documented = {
        name.removeprefix("pytest_agentctx.testing.")
        for name in DIRECTIVE.findall(text)
        if name.startswith("pytest_agentctx.testing.")
    }

    assert sorted(documented) == sorted(pytest_agentctx.testing.__all__)


#: The pages that may name internal modules: the architecture, and the pages under
#: "Internals" that document the layers for contributors.
INTERNALS_PAGES = (
    {"architecture.md"}
    | {
        f"reference/{name}.md"
        for name in ("context", "runtime", "assertions", "traffic", "doubles", "reports", "plugin")
    }
    | {"reference/cli.md", "reference/redaction.md"}
)


def test_the_docs_name_no_internal_module() -> None:
    # `pytest_agentctx.X` in prose or code: X is a public name, `testing`, or a dunder
    allowed = {*PUBLIC, "testing"}
    found = sorted(
        f"{path.relative_to(ROOT).as_posix()}: {match.group(0)}"
        for path in _documented_files()
        if path.relative_to(DOCS if DOCS in path.parents else ROOT).as_posix()
        not in INTERNALS_PAGES
        for match in re.finditer(r"\bpytest_agentctx\.(\w+)", path.read_text(encoding="utf-8"))
        if match.group(1) not in allowed and not match.group(1).startswith("__")
    )

    assert found == [], (
        "the docs name internal modules (docs/architecture.md, 'What you may import'): "
        "name the public import path instead"
    )
