"""The layers of the package and the direction of their imports (docs/architecture.md).

Each module belongs to one layer: a sub-package of ``pytest_agentctx`` (``context``,
``assertions``, ``traffic``, ``doubles``, ``reports``, ``runtime``, ``plugin``), the private
helpers, the exceptions and the redaction package at the top level (``base``), or the public facade
(``pytest_agentctx/__init__.py``). A layer imports only the layers ``MAY_IMPORT`` gives it
(and itself). Every import counts: at module level, inside functions, and under
``TYPE_CHECKING``. An import the direction forbids but the code has today is listed in
``ALLOWANCES``, with the reason, until the code is changed to do without it.
"""

from __future__ import annotations

import ast
import tokenize
from importlib import import_module
from pathlib import Path

import pytest

PACKAGE = "pytest_agentctx"
PACKAGE_DIR = Path(__file__).resolve().parents[2] / PACKAGE

#: The modules and packages at the top level of the package that are not the facade or a
#: layer: every layer may import them, and they import no layer.
BASE_MODULES = {"exceptions", "_lazy", "_files", "_locks", "_untrusted", "redaction"}

#: Which layers each layer may import, besides itself (docs/architecture.md draws it).
MAY_IMPORT: dict[str, set[str]] = {
    "base": set(),
    "context": {"base"},
    "assertions": {"base", "context"},
    "traffic": {"base", "context"},
    "doubles": {"base", "context", "traffic"},
    "reports": {"base", "context", "traffic"},
    "runtime": {"base", "context", "traffic", "doubles"},
    "evals": {"base", "context", "traffic", "doubles", "runtime"},
    "plugin": {
        "base",
        "context",
        "assertions",
        "traffic",
        "doubles",
        "reports",
        "runtime",
        "evals",
    },
    "cli": {"base", "context", "assertions", "traffic", "doubles", "reports", "runtime", "evals"},
    "facade": {
        "base",
        "context",
        "assertions",
        "traffic",
        "doubles",
        "reports",
        "runtime",
        "evals",
    },
    # pytest_agentctx.testing, the second facade: what tests and helpers need beyond the
    # package's names, some of it defined by the plugin and the command
    "testing": {
        "base",
        "context",
        "assertions",
        "traffic",
        "doubles",
        "reports",
        "runtime",
        "evals",
        "plugin",
        "cli",
    },
}

#: Imports against the direction that the code has today: (importing module, imported
#: module), each with why it is there. Remove an entry when its import goes.
ALLOWANCES: dict[tuple[str, str], str] = {}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str:
    """The layer of ``module``, a module or package of pytest_agentctx."""
    parts = module.split(".")
    if parts in ([PACKAGE], [PACKAGE, "_public"]):  # the facade and its table of names
        return "facade"
    if parts == [PACKAGE, "testing"]:
        return "testing"
    if parts[1] == "__main__":  # python -m pytest_agentctx: the command
        return "cli"
    if parts[1] in BASE_MODULES:
        return "base"
    if parts[1] in MAY_IMPORT and (PACKAGE_DIR / parts[1]).is_dir():
        return parts[1]
    raise AssertionError(
        f"{module} belongs to no layer: put it in one of the sub-packages "
        f"{sorted(set(MAY_IMPORT) - {'base', 'facade'})}, or list it in BASE_MODULES"
    )


def is_module(module: str) -> bool:
    path = PACKAGE_DIR.parent.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def package_imports(path: Path) -> list[tuple[int, str]]:
    """Every module of pytest_agentctx that the file at ``path`` imports, with the line:
    module level, function level and under ``TYPE_CHECKING`` alike."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                # ``from pytest_agentctx.traffic import transport`` imports a module
                submodule = f"{source}.{alias.name}"
                found.append((node.lineno, submodule if is_module(submodule) else source))
    return [(line, module) for line, module in found if module.split(".")[0] == PACKAGE]


def modules() -> list[Path]:
    return sorted(PACKAGE_DIR.rglob("*.py"))


def wrong_way_imports() -> list[tuple[str, int, str, str]]:
    """(file, line, importing module, imported module) of each import against the layers."""
    found = set()
    for path in modules():
        importer = module_name(path)
        for line, imported in package_imports(path):
            source, target = layer(importer), layer(imported)
            if target != source and target not in MAY_IMPORT[source]:
                found.add((str(path.relative_to(PACKAGE_DIR.parent)), line, importer, imported))
    return sorted(found)


def test_every_module_belongs_to_a_layer() -> None:
    assert {module_name(path): layer(module_name(path)) for path in modules()}


def test_each_layer_imports_only_the_layers_below_it() -> None:
    wrong = [
        f"{file}:{line}: {importer} ({layer(importer)}) imports {imported} ({layer(imported)})"
        for file, line, importer, imported in wrong_way_imports()
        if (importer, imported) not in ALLOWANCES
    ]

    assert wrong == [], (
        "imports against the layers of docs/architecture.md (a layer imports only what "
        "MAY_IMPORT gives it):\n" + "\n".join(wrong)
    )


def test_every_allowance_is_still_needed() -> None:
    found = {(importer, imported) for _, _, importer, imported in wrong_way_imports()}

    assert sorted(set(ALLOWANCES) - found) == [], (
        "these imports are gone: remove their entries from ALLOWANCES"
    )


#: The layers that are sub-packages of modules (``plugin/__init__.py`` is the entry point: it
#: registers the plugin's modules).
LAYER_PACKAGES = ["assertions", "context", "doubles", "evals", "reports", "runtime", "traffic"]


@pytest.mark.parametrize("name", LAYER_PACKAGES)
def test_a_layer_package_imports_nothing_when_imported(name: str) -> None:
    # importing one module of a layer must not import the layer's other modules
    tree = ast.parse((PACKAGE_DIR / name / "__init__.py").read_text(encoding="utf-8"))
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]

    assert [ast.unparse(node) for node in imports] == []


def type_checking_lines(tree: ast.AST) -> set[int]:
    """The lines of the imports under ``if TYPE_CHECKING:`` in ``tree``: imports only a type
    checker reads, which run nothing."""
    return {
        inner.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for statement in node.body
        for inner in ast.walk(statement)
        if isinstance(inner, ast.Import | ast.ImportFrom)
    }


def run_time_imports(path: Path) -> set[str]:
    """The modules of pytest_agentctx that the file at ``path`` imports when it runs: at
    module level and inside functions, not under ``TYPE_CHECKING``."""
    type_only = type_checking_lines(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    own = module_name(path)
    return {module for line, module in package_imports(path) if line not in type_only} - {own}


def cycles_of(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each set of modules of ``graph`` (module to the modules it imports) that import one
    another, directly or through others: its strongly connected components of more than one
    module (Tarjan's algorithm), each sorted."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for imported in sorted(graph.get(module, set()) & set(graph)):
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            component: list[str] = []
            while not component or component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return sorted(cycles)


def test_no_modules_import_one_another_at_run_time() -> None:
    cycles = cycles_of({module_name(path): run_time_imports(path) for path in modules()})

    assert cycles == [], (
        "modules that import one another at run time: move what they share into a module "
        "below them, or import it for type checking only (under TYPE_CHECKING):\n"
        + "\n".join(" <-> ".join(cycle) for cycle in cycles)
    )


def test_cycles_of_finds_a_cycle_through_a_third_module() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

    assert cycles_of(graph) == [["a", "b", "c"]]


def test_cycles_of_finds_none_in_imports_that_point_one_way() -> None:
    graph = {"a": {"b", "c"}, "b": {"c"}, "c": set()}

    assert cycles_of(graph) == []


def test_an_import_under_type_checking_is_not_a_run_time_import() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from pytest_agentctx import exceptions\n"
        "if TYPE_CHECKING:\n"
        "    from pytest_agentctx import _files\n"
        "def f():\n"
        "    from pytest_agentctx import _locks\n"
    )

    assert type_checking_lines(ast.parse(source)) == {4}


#: The most ``Any`` the package may name per 1,000 lines, outside ``assertions/`` (whose
#: patterns match any value a user compares, by design).
MAX_ANY_PER_1000_LINES = 15


def any_count(path: Path) -> int:
    """How many times the source at ``path`` names ``Any`` (as a name token: not in strings
    or comments)."""
    with path.open(encoding="utf-8") as source:
        tokens = tokenize.generate_tokens(source.readline)
        return sum(token.type == tokenize.NAME and token.string == "Any" for token in tokens)


def test_the_package_names_any_rarely_outside_the_assertions() -> None:
    counted = [path for path in modules() if path.relative_to(PACKAGE_DIR).parts[0] != "assertions"]
    names = {str(path.relative_to(PACKAGE_DIR)): any_count(path) for path in counted}
    lines = sum(len(path.read_text(encoding="utf-8").splitlines()) for path in counted)
    per_1000 = 1000 * sum(names.values()) / lines
    most = sorted(names.items(), key=lambda item: -item[1])[:10]

    assert per_1000 < MAX_ANY_PER_1000_LINES, (
        f"the package names Any {per_1000:.1f} times per 1,000 lines outside assertions/ "
        f"(at most {MAX_ANY_PER_1000_LINES}): type the values it stands for (a Protocol, a "
        f"TypedDict, object narrowed with isinstance). Most in: {most}"
    )


#: The modules that may say what they export with ``__all__``: the two supported modules, and
#: the internal lazy table of the cassette names (its ``__all__`` is its table's names).
#: Every other module is internal and advertises nothing (docs/architecture.md, "What you
#: may import"); a package that gives its modules' names to the rest of the package
#: re-exports them explicitly (``from .m import X as X``).
MAY_DECLARE_ALL = {PACKAGE, f"{PACKAGE}.testing", f"{PACKAGE}.traffic.cassettes"}


def declares_all(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return any(
        isinstance(target, ast.Name) and target.id == "__all__"
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
    )


def is_errors_module(module: str) -> bool:
    return module.rpartition(".")[2] in {"errors", "exceptions"}


def test_only_the_supported_modules_advertise_names() -> None:
    advertising = [
        module_name(path)
        for path in modules()
        if declares_all(path)
        and module_name(path) not in MAY_DECLARE_ALL
        and not is_errors_module(module_name(path))
    ]

    assert advertising == [], (
        "internal modules with an __all__ (they advertise names no one may import): "
        "remove it, or give the name a supported home in pytest_agentctx or "
        "pytest_agentctx.testing"
    )


@pytest.mark.parametrize(
    "path", [path for path in modules() if is_errors_module(module_name(path))], ids=str
)
def test_an_errors_module_lists_public_exceptions_only(path: Path) -> None:
    # exceptions.publish gives the exceptions an errors module lists the package's name
    import pytest_agentctx

    listed = vars(import_module(module_name(path)))["__all__"]

    assert sorted(set(listed) - set(pytest_agentctx.__all__)) == []
