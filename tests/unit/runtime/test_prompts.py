"""Unit tests for pytest_agentctx.runtime.prompts: templates, partials, overrides, missing names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_agentctx.runtime.errors import PromptTemplateError
from pytest_agentctx.runtime.prompts import PACKAGE_TEMPLATES, PromptTemplates
from pytest_agentctx.runtime.tools import tool

DEFAULT_VARIABLES = {
    "agent_type": "researcher",
    "goal": "Find what the knowledge base says about refunds.",
    "tools": ["search", "write_artifact"],
    "workspace": "the research workspace",
}


def folder(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


# -- rendering ----------------------------------------------------------------------------


def test_variables_are_replaced(tmp_path: Path) -> None:
    templates = PromptTemplates(folder(tmp_path, {"hello.md": "Hi {{ name }}, {{name}}!\n"}))

    assert templates.render("hello", name="Ada") == "Hi Ada, Ada!"


def test_one_trailing_newline_of_a_file_is_dropped(tmp_path: Path) -> None:
    templates = PromptTemplates(folder(tmp_path, {"a.md": "text\n\n"}), package_defaults=False)

    assert templates.render("a") == "text\n"


def test_lists_are_joined_tools_named_and_sets_sorted(tmp_path: Path) -> None:
    @tool
    def search(query: str) -> str:
        """Search."""
        return query

    templates = PromptTemplates(folder(tmp_path, {"t.md": "{{ a }} | {{ b }} | {{ c }} | {{ d }}"}))

    assert (
        templates.render("t", a=["x", search], b={"z", "y"}, c=3, d=()) == "x, search | y, z | 3 | "
    )


def test_a_partial_is_rendered_with_the_same_variables(tmp_path: Path) -> None:
    templates = PromptTemplates(
        folder(
            tmp_path,
            {
                "main.md": "Goal: {{ goal }}\n{{> parts/footer }}\n",
                "parts/footer.md": "-- {{ goal }}\n",
            },
        )
    )

    assert templates.render("main", goal="win") == "Goal: win\n-- win"


def test_a_name_with_a_suffix_names_the_file_itself(tmp_path: Path) -> None:
    templates = PromptTemplates(folder(tmp_path, {"plain.txt": "text {{ x }}"}))

    assert templates.render("plain.txt", x=1) == "text 1"


def test_a_rendered_value_is_not_rendered_again(tmp_path: Path) -> None:
    templates = PromptTemplates(folder(tmp_path, {"t.md": "{{ a }}"}))

    assert templates.render("t", a="{{ b }}") == "{{ b }}"


def test_extra_variables_are_ignored(tmp_path: Path) -> None:
    templates = PromptTemplates(folder(tmp_path, {"t.md": "{{ a }}"}))

    assert templates.render("t", a="x", unused="y") == "x"


# -- lookup order -------------------------------------------------------------------------


def test_the_first_directory_wins_then_the_next_then_the_package(tmp_path: Path) -> None:
    first = folder(tmp_path / "first", {"writer.md": "first writer"})
    second = folder(
        tmp_path / "second", {"writer.md": "second", "researcher.md": "second researcher"}
    )
    templates = PromptTemplates(first, second)

    assert (
        templates.render("writer"),
        templates.render("researcher"),
        templates.locate("orchestrator"),
    ) == ("first writer", "second researcher", f"{PACKAGE_TEMPLATES}/orchestrator.md")


def test_overriding_a_partial_changes_every_template_that_includes_it(
    tmp_path: Path,
) -> None:
    templates = PromptTemplates(folder(tmp_path, {"partials/tools.md": "TOOLS: {{ tools }}"}))

    rendered = templates.render("researcher", **DEFAULT_VARIABLES)

    assert "TOOLS: search, write_artifact" in rendered.splitlines()


def test_without_package_defaults_the_package_templates_are_not_found(
    tmp_path: Path,
) -> None:
    templates = PromptTemplates(tmp_path, package_defaults=False)

    with pytest.raises(PromptTemplateError, match=r"Template 'writer' not found: no writer.md in"):
        templates.render("writer", **DEFAULT_VARIABLES)


def test_names_lists_every_template_once(tmp_path: Path) -> None:
    templates = PromptTemplates(folder(tmp_path, {"writer.md": "x", "mine/extra.md": "y"}))

    assert templates.names() == [
        "mine/extra",
        "orchestrator",
        "partials/tools",
        "partials/workspace",
        "researcher",
        "writer",
    ]


# -- the package's defaults ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["orchestrator", "researcher", "writer"])
def test_each_default_template_renders_with_the_documented_variables(name: str) -> None:
    rendered = PromptTemplates().render(name, **DEFAULT_VARIABLES)

    assert (
        rendered.startswith("You are the researcher agent"),
        "{{" in rendered,
        "You can call these tools: search, write_artifact." in rendered,
        "the research workspace" in rendered,
    ) == (True, False, True, True)


@pytest.mark.parametrize("name", ["orchestrator", "researcher", "writer"])
def test_each_default_template_uses_the_four_documented_variables(name: str) -> None:
    assert PromptTemplates().variables(name) == ["agent_type", "goal", "tools", "workspace"]


def test_source_is_the_unrendered_text() -> None:
    assert PromptTemplates().source("partials/tools").startswith("## Tools\n\nYou can call")


# -- errors -------------------------------------------------------------------------------


def test_a_missing_variable_names_the_template_line_and_variable(tmp_path: Path) -> None:
    templates = PromptTemplates(folder(tmp_path, {"t.md": "one\n{{ goal }} {{ who }}"}))

    with pytest.raises(
        PromptTemplateError,
        match=re.escape(
            "Template 't', line 2, uses {{ who }}, but no variable 'who' was given "
            "(given: goal). Pass who=... to render()."
        ),
    ):
        templates.render("t", goal="x")


def test_a_missing_variable_in_a_partial_names_the_partial_and_its_includer(
    tmp_path: Path,
) -> None:
    templates = PromptTemplates(folder(tmp_path, {"main.md": "{{> part }}", "part.md": "{{ x }}"}))

    with pytest.raises(
        PromptTemplateError,
        match=re.escape("Template 'part' (included by 'main'), line 1, uses {{ x }}"),
    ):
        templates.render("main")


def test_a_missing_template_names_the_directories_searched(tmp_path: Path) -> None:
    templates = PromptTemplates(tmp_path)

    with pytest.raises(
        PromptTemplateError,
        match=re.escape(
            f"Template 'nope' not found: no nope.md in {tmp_path}; {PACKAGE_TEMPLATES}"
        ),
    ):
        templates.render("nope")


def test_a_missing_partial_names_it_and_the_template_including_it(tmp_path: Path) -> None:
    templates = PromptTemplates(folder(tmp_path, {"main.md": "{{> partials/nope }}"}))

    with pytest.raises(
        PromptTemplateError,
        match=re.escape("Template 'partials/nope' (included by 'main') not found"),
    ):
        templates.render("main")


def test_a_partial_including_itself_is_a_cycle(tmp_path: Path) -> None:
    templates = PromptTemplates(
        folder(tmp_path, {"a.md": "{{> b }}", "b.md": "{{> c }}", "c.md": "{{> b }}"})
    )

    with pytest.raises(PromptTemplateError, match=re.escape("(cycle: b -> c -> b)")):
        templates.render("a")


def test_the_variables_of_a_cycle_are_refused_too(tmp_path: Path) -> None:
    templates = PromptTemplates(folder(tmp_path, {"a.md": "{{> a }}"}))

    with pytest.raises(PromptTemplateError, match=re.escape("(cycle: a -> a)")):
        templates.variables("a")


def test_nesting_is_limited(tmp_path: Path) -> None:
    files = {f"p{i}.md": f"{{{{> p{i + 1} }}}}" for i in range(40)}
    templates = PromptTemplates(folder(tmp_path, files))

    with pytest.raises(PromptTemplateError, match="is nested 32 partials deep"):
        templates.render("p0")


@pytest.mark.parametrize("tag", ["{{ two words }}", "{{ }}", "{{# comment }}", "{{ a.b }}"])
def test_a_tag_that_is_neither_variable_nor_partial_is_an_error(tmp_path: Path, tag: str) -> None:
    templates = PromptTemplates(folder(tmp_path, {"t.md": f"x\n{tag}"}))

    with pytest.raises(
        PromptTemplateError, match=re.escape(f"Template 't', line 2: {tag!r} is not a tag")
    ):
        templates.render("t")


@pytest.mark.parametrize("name", ["", "../secret", "/etc/passwd", "a//b", "a\\b", "a/./b"])
def test_template_names_must_be_relative_paths(tmp_path: Path, name: str) -> None:
    with pytest.raises(PromptTemplateError, match="is not valid"):
        PromptTemplates(tmp_path).render(name)


def test_a_partial_name_that_escapes_is_refused(tmp_path: Path) -> None:
    templates = PromptTemplates(folder(tmp_path, {"t.md": "{{> ../x }}"}))

    with pytest.raises(PromptTemplateError, match=re.escape("(in {{> }} of template 't')")):
        templates.render("t")


def test_a_variable_that_is_none_is_refused(tmp_path: Path) -> None:
    templates = PromptTemplates(folder(tmp_path, {"t.md": "{{ goal }}"}))

    with pytest.raises(PromptTemplateError, match="variable 'goal' is None"):
        templates.render("t", goal=None)


def test_a_missing_directory_is_refused_when_the_templates_are_made(tmp_path: Path) -> None:
    with pytest.raises(PromptTemplateError, match="does not exist or is not a folder"):
        PromptTemplates(tmp_path / "nope")
