"""Prompt templates: system prompts rendered from files, with shared partials and overrides.

::

    templates = PromptTemplates("prompts")
    system_prompt = templates.render(
        "researcher",
        agent_type="researcher",
        goal="Find what the knowledge base says about refunds.",
        tools=["search", "write_artifact"],
        workspace="the research workspace",
    )

A template is a text file, ``<name>.md`` unless the name has a suffix. It is looked up in
the given directories in order, then in the package's ``templates/`` folder (unless
``package_defaults=False``): a file of the same name in your directory overrides the
package's. Two tags exist:

* ``{{ variable }}``: the value of a keyword argument of :meth:`PromptTemplates.render`
  (strings as they are, tools by name, lists and tuples joined with ``", "``);
* ``{{> partial_name }}``: another template, looked up the same way and rendered with the
  same variables (``{{> partials/tools }}``); a partial that includes itself, directly or
  not, is an error.

Anything else between ``{{`` and ``}}`` is an error, and so is a missing template, partial
or variable: :class:`~pytest_agentctx.PromptTemplateError` names the template and what is
missing, at render time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath

from pytest_agentctx.runtime.errors import PromptTemplateError
from pytest_agentctx.runtime.tools import Tool

_TAG = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_NAME_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_MAX_DEPTH = 32
#: Where the package's default templates are described in messages.
PACKAGE_TEMPLATES = "pytest_agentctx/runtime/templates"


@dataclass(frozen=True)
class _Root:
    """One folder templates are looked up in."""

    folder: Traversable
    label: str


@dataclass(frozen=True)
class _Tag:
    kind: str  # "variable" or "partial"
    name: str
    line: int
    span: tuple[int, int]


def _check_name(name: object, *, included_by: str | None = None) -> str:
    where = f" (in {{{{> }}}} of template {included_by!r})" if included_by else ""
    if not isinstance(name, str) or not name:
        raise PromptTemplateError(
            f"Template name {name!r}{where} is not valid; expected a relative name such as "
            "'researcher' or 'partials/tools'."
        )
    parts = name.split("/")
    if any(not _NAME_PART.match(part) or part in (".", "..") for part in parts):
        raise PromptTemplateError(
            f"Template name {name!r}{where} is not valid: names are relative paths of "
            "letters, digits, '_', '-' and '.', separated by '/', without '..' "
            "(e.g. 'partials/tools')."
        )
    return name


def _file_name(name: str) -> str:
    return name if PurePosixPath(name).suffix else f"{name}.md"


def _parse(name: str, text: str) -> list[_Tag]:
    tags: list[_Tag] = []
    for match in _TAG.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        body = match.group(1).strip()
        if body.startswith(">"):
            partial = body[1:].strip()
            _check_name(partial, included_by=name)
            tags.append(_Tag("partial", partial, line, match.span()))
        elif body.isidentifier():
            tags.append(_Tag("variable", body, line, match.span()))
        else:
            raise PromptTemplateError(
                f"Template {name!r}, line {line}: {match.group()!r} is not a tag. Write "
                "{{ variable_name }} for a variable or {{> template_name }} for a partial."
            )
    return tags


def _to_text(value: object, *, template: str, variable: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Tool):
        return value.name
    if value is None:
        raise PromptTemplateError(
            f"Template {template!r}: variable {variable!r} is None; pass text (or a list of "
            "texts) for it."
        )
    if isinstance(value, (list, tuple)):
        return ", ".join(_to_text(item, template=template, variable=variable) for item in value)
    if isinstance(value, (set, frozenset)):
        return ", ".join(
            sorted(_to_text(item, template=template, variable=variable) for item in value)
        )
    return str(value)


class PromptTemplates:
    """Templates looked up in ``directories`` in order, then in the package's defaults.

    Each directory must exist. ``package_defaults=False`` leaves the package's
    ``templates/`` folder out of the search.
    """

    def __init__(self, *directories: str | Path, package_defaults: bool = True) -> None:
        roots: list[_Root] = []
        for directory in directories:
            path = Path(directory)
            if not path.is_dir():
                raise PromptTemplateError(
                    f"Template directory {str(path)!r} does not exist or is not a folder. "
                    "Create it, or fix the path given to PromptTemplates(...)."
                )
            roots.append(_Root(path, str(path)))
        if package_defaults:
            roots.append(
                _Root(
                    resources.files("pytest_agentctx.runtime").joinpath("templates"),
                    PACKAGE_TEMPLATES,
                )
            )
        self._roots = tuple(roots)

    @property
    def directories(self) -> list[str]:
        """Where templates are looked up, in order."""
        return [root.label for root in self._roots]

    def locate(self, name: str) -> str:
        """Where template ``name`` comes from: ``"<directory>/<file>"``."""
        root, file_name, _ = self._load(_check_name(name), included_by=None)
        return f"{root.label}/{file_name}"

    def names(self) -> list[str]:
        """The names of every template that can be rendered (overrides counted once)."""
        found: set[str] = set()
        for root in self._roots:
            for relative in _walk(root.folder, ""):
                found.add(relative[:-3] if relative.endswith(".md") else relative)
        return sorted(found)

    def source(self, name: str) -> str:
        """The unrendered text of template ``name``, as the search order finds it."""
        return self._load(_check_name(name), included_by=None)[2]

    def variables(self, name: str) -> list[str]:
        """The variables template ``name`` and its partials use, sorted."""
        found: set[str] = set()
        self._visit(_check_name(name), (), lambda tag: found.add(tag.name))
        return sorted(found)

    def render(self, name: str, /, **variables: object) -> str:
        """Template ``name`` with its partials included and its variables replaced."""
        return self._render(_check_name(name), variables, ())

    def _load(self, name: str, *, included_by: str | None) -> tuple[_Root, str, str]:
        file_name = _file_name(name)
        for root in self._roots:
            candidate = root.folder.joinpath(*file_name.split("/"))
            if candidate.is_file():
                text = candidate.read_text(encoding="utf-8")
                return root, file_name, text[:-1] if text.endswith("\n") else text
        searched = "; ".join(root.label for root in self._roots) or "no directories"
        where = f" (included by {included_by!r})" if included_by else ""
        raise PromptTemplateError(
            f"Template {name!r}{where} not found: no {file_name} in {searched}. Create "
            f"{file_name} in one of them, or fix the name. Available: "
            f"{', '.join(self.names()) or 'none'}."
        )

    def _render(self, name: str, variables: Mapping[str, object], stack: tuple[str, ...]) -> str:
        self._guard(name, stack)
        _, _, text = self._load(name, included_by=stack[-1] if stack else None)
        out: list[str] = []
        position = 0
        for tag in _parse(name, text):
            out.append(text[position : tag.span[0]])
            position = tag.span[1]
            if tag.kind == "partial":
                out.append(self._render(tag.name, variables, (*stack, name)))
                continue
            if tag.name not in variables:
                included = f" (included by {stack[-1]!r})" if stack else ""
                given = ", ".join(sorted(variables)) or "none"
                raise PromptTemplateError(
                    f"Template {name!r}{included}, line {tag.line}, uses {{{{ {tag.name} }}}}, "
                    f"but no variable {tag.name!r} was given (given: {given}). Pass "
                    f"{tag.name}=... to render()."
                )
            out.append(_to_text(variables[tag.name], template=name, variable=tag.name))
        out.append(text[position:])
        return "".join(out)

    def _visit(
        self, name: str, stack: tuple[str, ...], on_variable: Callable[[_Tag], object]
    ) -> None:
        self._guard(name, stack)
        _, _, text = self._load(name, included_by=stack[-1] if stack else None)
        for tag in _parse(name, text):
            if tag.kind == "partial":
                self._visit(tag.name, (*stack, name), on_variable)
            else:
                on_variable(tag)

    @staticmethod
    def _guard(name: str, stack: tuple[str, ...]) -> None:
        if name in stack:
            cycle = " -> ".join((*stack[stack.index(name) :], name))
            raise PromptTemplateError(
                f"Template {stack[-1]!r} includes {name!r}, which is already being rendered "
                f"(cycle: {cycle}). Remove one of the {{{{> }}}} tags of the cycle."
            )
        if len(stack) >= _MAX_DEPTH:
            raise PromptTemplateError(
                f"Template {name!r} is nested {len(stack)} partials deep "
                f"({' -> '.join(stack)}); at most {_MAX_DEPTH} are allowed."
            )

    def __repr__(self) -> str:
        return f"PromptTemplates({', '.join(repr(d) for d in self.directories)})"


def _walk(folder: Traversable, prefix: str) -> Iterator[str]:
    if not folder.is_dir():
        return
    for child in sorted(folder.iterdir(), key=lambda c: c.name):
        if child.name.startswith((".", "__")):
            continue
        if child.is_dir():
            yield from _walk(child, f"{prefix}{child.name}/")
        elif child.is_file():
            yield f"{prefix}{child.name}"
