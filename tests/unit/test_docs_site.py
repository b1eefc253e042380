"""The documentation site's configuration (mkdocs.yml) stays complete as pages are added.

* Every Markdown page under docs/ is in the nav (MkDocs builds a page left out of the nav
  but links it from nowhere), and every page the nav names exists.
* The API reference (docs/reference/index.md) documents every public name of the package,
  the names of ``PUBLIC`` in pytest_agentctx/_public.py, and no other.

``make docs`` builds the site itself (strict: any warning fails it).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_agentctx._public import PUBLIC

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: The directive of mkdocstrings: ``::: dotted.name`` alone on a line.
DIRECTIVE = re.compile(r"^::: (\S+)\s*$", re.MULTILINE)


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
