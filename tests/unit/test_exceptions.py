"""Unit tests for the errors: one base, three families, each error defined in its layer and
drawn in the tree of pytest_agentctx.exceptions' docstring."""

import ast
import importlib
import pickle
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

import pytest_agentctx
from pytest_agentctx import exceptions
from pytest_agentctx._public import PUBLIC
from pytest_agentctx.assertions.errors import MismatchError
from pytest_agentctx.context.model import AgentContext
from pytest_agentctx.doubles.errors import UnexpectedModelCall
from pytest_agentctx.exceptions import AgentAssertionError, AgentCtxError, RunError, UsageError
from pytest_agentctx.runtime.errors import MaxIterationsExceeded

FAMILIES = (UsageError, AgentAssertionError, RunError)

#: Every error the package exports: each public name that is an AgentCtxError.
ERRORS = sorted(
    (
        value
        for name in pytest_agentctx.__all__
        if isinstance(value := getattr(pytest_agentctx, name), type)
        and issubclass(value, AgentCtxError)
    ),
    key=lambda exc: exc.__name__,
)
#: Bases that only group the errors of one domain (their subclasses have the family).
DOMAIN_BASES = {"CassetteError"}


def documented_tree() -> dict[str, tuple[str, list[str]]]:
    """Each error drawn in the docstring of ``exceptions``: its module and its bases."""
    tree = (exceptions.__doc__ or "").split("from ``pytest_agentctx``::", 1)[1]
    found: dict[str, tuple[str, list[str]]] = {}
    module = ""
    for line in tree.splitlines():
        heading = re.match(r"^    (pytest_agentctx\.[\w.]+)\s*$", line)
        entry = re.match(r"^        (\w+)\s+\(([^)]*)\)\s*$", line)
        if heading:
            module = heading.group(1)
        elif entry:
            found[entry.group(1)] = (module, [b.strip() for b in entry.group(2).split(",")])
    return found


def run_so_far() -> AgentContext:
    return AgentContext.new("loop forever", at=datetime(2025, 1, 1, tzinfo=UTC))


def test_the_docstring_tree_names_every_error_but_the_base_and_families() -> None:
    base_names = {"AgentCtxError", *(family.__name__ for family in FAMILIES)}

    assert sorted(documented_tree()) == sorted(
        exc.__name__ for exc in ERRORS if exc.__name__ not in base_names
    )


@pytest.mark.parametrize("name", sorted(documented_tree()))
def test_each_error_is_defined_in_the_module_with_the_bases_the_tree_gives(
    name: str,
) -> None:
    exc = getattr(pytest_agentctx, name)
    defined_in = f"pytest_agentctx.{PUBLIC[name]}"

    assert name in vars(importlib.import_module(defined_in))
    assert (defined_in, [base.__name__ for base in exc.__bases__]) == documented_tree()[name]


#: Every exception the package exports, errors or not (warnings, pytest's outcomes).
EXCEPTIONS = sorted(
    (
        name
        for name in pytest_agentctx.__all__
        if isinstance(value := getattr(pytest_agentctx, name), type)
        and issubclass(value, BaseException)
    ),
)


@pytest.mark.parametrize("name", EXCEPTIONS)
def test_a_public_exception_shows_the_package_as_its_module(name: str) -> None:
    exc = getattr(pytest_agentctx, name)

    assert f"{exc.__module__}.{exc.__qualname__}" == f"pytest_agentctx.{name}"


@pytest.mark.parametrize("name", EXCEPTIONS)
def test_a_public_exception_class_pickles_as_the_package_s_name(name: str) -> None:
    exc = getattr(pytest_agentctx, name)

    assert pickle.loads(pickle.dumps(exc)) is exc


def exceptions_shown_as_the_package() -> list[type[BaseException]]:
    """Every exception class of the package's modules that shows the package as its module."""
    root = Path(pytest_agentctx.__file__).parent
    found: list[type[BaseException]] = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__" or "_child_site" in parts:
            continue
        module = importlib.import_module(".".join(parts))
        found.extend(
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, BaseException)
            and value.__module__ == "pytest_agentctx"
        )
    return found


def test_every_exception_shown_as_the_package_s_is_found_there() -> None:
    shown = exceptions_shown_as_the_package()

    assert shown
    assert [e for e in shown if getattr(pytest_agentctx, e.__name__, None) is not e] == []


def test_a_raised_public_error_pickles_to_an_equal_error() -> None:
    error = pytest_agentctx.CassetteMiss("Cassette c.json cannot answer POST /v1/chat")

    copy = pickle.loads(pickle.dumps(error))

    assert (type(copy), copy.args) == (pytest_agentctx.CassetteMiss, error.args)


@pytest.mark.parametrize("exc", ERRORS, ids=[exc.__name__ for exc in ERRORS])
def test_every_error_but_the_base_and_domain_bases_is_in_exactly_one_family(
    exc: type[Exception],
) -> None:
    families = [family.__name__ for family in FAMILIES if issubclass(exc, family)]
    expected = 0 if exc is AgentCtxError or exc.__name__ in DOMAIN_BASES else 1

    assert len(families) == expected, families


def domain_base_raises() -> list[str]:
    """Each place in the package that makes an error of a domain base itself (not one of its
    subclasses, which have a family): ``CassetteError(...)``."""
    found = []
    for path in sorted(Path(pytest_agentctx.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in DOMAIN_BASES
            ):
                found.append(f"{path.name}:{node.lineno}: {node.func.id}(...)")
    return found


def test_no_error_is_made_of_a_domain_base_so_every_raised_error_has_a_family() -> None:
    assert domain_base_raises() == []


def test_the_families_and_the_base_are_the_only_errors_of_the_base_module() -> None:
    assert sorted(exceptions.__all__) == [
        "AgentAssertionError",
        "AgentCtxError",
        "RunError",
        "UsageError",
    ]


def test_an_assertion_family_error_is_an_assertion_error() -> None:
    assert issubclass(AgentAssertionError, AssertionError)


@pytest.mark.parametrize("exc", ERRORS, ids=[exc.__name__ for exc in ERRORS])
def test_every_error_that_is_an_assertion_error_is_in_the_assertion_family(
    exc: type[Exception],
) -> None:
    assert issubclass(exc, AssertionError) == issubclass(exc, AgentAssertionError)


def test_agent_ctx_error_is_a_plain_exception() -> None:
    assert AgentCtxError.__bases__ == (Exception,)


@pytest.mark.parametrize("exc", ERRORS, ids=[exc.__name__ for exc in ERRORS])
def test_every_error_has_a_docstring(exc: type[Exception]) -> None:
    assert (exc.__doc__ or "").strip()


def test_a_subclass_error_is_caught_by_except_agent_ctx_error() -> None:
    with pytest.raises(AgentCtxError, match="no scripted reply left"):
        raise UnexpectedModelCall("no scripted reply left")


def test_a_run_error_is_caught_by_its_family() -> None:
    with pytest.raises(RunError, match="stopped after 3"):
        raise MaxIterationsExceeded("stopped after 3", context=run_so_far(), max_iterations=3)


def test_max_iterations_exceeded_carries_the_context_and_the_limit() -> None:
    context = run_so_far()

    error = MaxIterationsExceeded("stopped after 3 iterations", context=context, max_iterations=3)

    assert (str(error), error.context, error.max_iterations) == (
        "stopped after 3 iterations",
        context,
        3,
    )


def test_max_iterations_exceeded_takes_context_and_limit_by_keyword_only() -> None:
    with pytest.raises(TypeError, match="positional argument"):
        MaxIterationsExceeded("stopped", run_so_far(), 3)  # type: ignore[call-arg]


def test_mismatch_error_keeps_every_mismatch_and_is_an_assertion_error() -> None:
    error = MismatchError("2 mismatches", mismatches=("first", "second"))  # type: ignore[arg-type]

    assert (isinstance(error, AssertionError), error.mismatches, str(error)) == (
        True,
        ["first", "second"],
        "2 mismatches",
    )
