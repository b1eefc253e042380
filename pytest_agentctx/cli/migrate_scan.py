"""What ``pytest-agentctx migrate`` reads in a project's Python files: which recording tool
the suite uses (:class:`Evidence`) and what the command cannot change for it
(:class:`Finding`, each with its file, line and the line to write instead).

The files are parsed (:mod:`ast`), never imported or run. Folders that hold no code of
the project (virtual environments, ``site-packages``, caches, build output, hidden
folders) are skipped.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

RECORDING = "pytest-recording"
VCR = "pytest-vcr"
VCRPY = "vcrpy"

_SKIPPED = {"__pycache__", "node_modules", "site-packages", "build", "dist", "venv", "env"}
_MAX_BYTES = 2_000_000
_MAX_FILES = 20_000

#: vcr_config keys this package cannot honour, with what to do instead.
UNSUPPORTED_VCR_CONFIG = {
    "path_transformer": "name the file with @pytest.mark.agent(cassette=...)",
    "func_path_generator": "name the file with @pytest.mark.agent(cassette=...)",
    "custom_patches": "the package patches httpx2, httpx, urllib3 (requests) and aiohttp "
    "itself: remove the key",
    "persister": "cassettes are files in the cassette folder: remove the key",
    "before_save_interaction": "scrub values with agent_cassette_config's redact_values",
    "after_load_interaction": "normalise bodies for matching with agent_cassette_config's "
    "body_hook",
    "skip_patchers": "remove the key",
}
#: vcr_config keys honoured only in part, with what the plugin does with them.
CHECKED_VCR_CONFIG = {
    "before_record_request": "accepted only while it returns each request unchanged: "
    "redact with redact_values (or agent_secret_env), loosen matching with body_hook or "
    "match_on",
    "before_record_response": "accepted only while it returns each response unchanged: "
    "redact with redact_values (or agent_secret_env); bodies are stored decoded",
    "before_record": "accepted only while it returns each request unchanged: redact with "
    "redact_values, loosen matching with body_hook",
}
#: vcr_config keys the plugin accepts only as False.
FALSE_ONLY_VCR_CONFIG = {
    "allow_playback_repeats": "each recording answers once: record the request as many "
    "times as the test sends it",
    "drop_unused_requests": "unused recordings are reported (agent_migration_until), then "
    "dropped by pytest-agentctx cassettes prune",
    "inject_cassette": "ask for the agent_cassette fixture",
    "filter_nested_post_data_parameters": "redact nested values with redact_values",
}

#: Fixtures of the old plugins a test may ask for, gone once that plugin is turned off.
_OLD_FIXTURES = {
    "vcr": "the agent_cassette fixture (its interactions, replayed, recorded)",
    "vcr_cassette": "the agent_cassette fixture (its interactions, replayed, recorded)",
    "cassette": "the agent_cassette fixture (its interactions, replayed, recorded)",
}
_RECORDING_NAMES = {"default_cassette_name", "pytest_recording_configure"}
_VCR_NAMES = {"vcr_cassette_name"}


@dataclass(frozen=True)
class Evidence:
    """A line that shows the suite uses ``tool`` (``marker``: the shared ``vcr`` marker,
    which both plugins read)."""

    tool: str
    path: Path
    line: int
    what: str
    marker: bool = False


@dataclass(frozen=True)
class Finding:
    """Something the command leaves to the user: where, the line as written, what to do."""

    path: Path
    line: int
    code: str
    advice: str


@dataclass
class Scan:
    """The evidence and findings of a project's Python files."""

    evidence: list[Evidence] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files: int = 0


def python_files(root: Path) -> Iterator[Path]:
    """The project's ``.py`` files under ``root``, in a stable order."""
    return project_files(root, (".py",))


def project_files(root: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    """The project's files under ``root`` whose names end with one of ``suffixes``, in a
    stable order."""
    count = 0
    stack = [root]
    while stack and count < _MAX_FILES:
        folder = stack.pop()
        try:
            children = sorted(folder.iterdir())
        except OSError:
            continue
        for child in children:
            if child.is_symlink():
                continue
            if child.is_dir():
                if _project_folder(child):
                    stack.append(child)
            elif child.suffix in suffixes and child.is_file():
                count += 1
                yield child


def _project_folder(folder: Path) -> bool:
    hidden = folder.name.startswith(".") or folder.name in _SKIPPED
    return not hidden and not (folder / "pyvenv.cfg").exists()


def scan(root: Path) -> Scan:
    """Read every Python file of the project under ``root``."""
    result = Scan()
    for path in python_files(root):
        try:
            if path.stat().st_size > _MAX_BYTES:
                continue
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source, str(path))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        result.files += 1
        _Visitor(path, source.splitlines(), result).visit(tree)
    return result


class _Visitor(ast.NodeVisitor):
    def __init__(self, path: Path, lines: list[str], result: Scan) -> None:
        self.path = path
        self.lines = lines
        self.result = result

    def _code(self, node: ast.AST) -> str:
        line = getattr(node, "lineno", 1)
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    def _evidence(self, tool: str, node: ast.AST, what: str, marker: bool = False) -> None:
        line = getattr(node, "lineno", 1)
        self.result.evidence.append(Evidence(tool, self.path, line, what, marker))

    def _finding(self, node: ast.AST, advice: str) -> None:
        line = getattr(node, "lineno", 1)
        self.result.findings.append(Finding(self.path, line, self._code(node), advice))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.level == 0:
            self._import(node, node.module)

    def _import(self, node: ast.AST, module: str) -> None:
        top = module.split(".", 1)[0]
        if top == "vcr":
            self._evidence(VCRPY, node, f"import {module}")
        elif top == "pytest_recording":
            self._evidence(RECORDING, node, f"import {module}")
            self._finding(
                node,
                "pytest-recording's own module is not there once the plugin is off: "
                "the network is blocked while replaying (expect_network_blocked of "
                "pytest_agentctx.testing checks it), hosts to reach go in "
                "agent_allowed_hosts",
            )
        elif top == "pytest_vcr":
            self._evidence(VCR, node, f"import {module}")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)
        self.generic_visit(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)
        self.generic_visit(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name in _RECORDING_NAMES:
            self._evidence(RECORDING, node, f"def {node.name}")
        elif node.name in _VCR_NAMES:
            self._evidence(VCR, node, f"def {node.name}")
        elif node.name == "vcr_config":
            self._evidence(RECORDING, node, "def vcr_config", marker=True)
            self._vcr_config(node)
        if node.name == "pytest_recording_configure":
            self._configure_hook(node)
            return
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
            if arg.arg in _OLD_FIXTURES and not node.name.startswith("vcr"):
                self._finding(
                    arg,
                    f"the {arg.arg} fixture is the old plugin's: ask for "
                    f"{_OLD_FIXTURES[arg.arg]} instead",
                )

    def _vcr_config(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for child in ast.walk(node):
            keys: list[tuple[str, ast.AST]] = []
            if isinstance(child, ast.Dict):
                keys = [
                    (key.value, key)
                    for key in child.keys
                    if isinstance(key, ast.Constant) and isinstance(key.value, str)
                ]
            elif isinstance(child, ast.Call) and _name(child.func) == "dict":
                keys = [(kw.arg, kw) for kw in child.keywords if kw.arg]
            for key, where in keys:
                advice = UNSUPPORTED_VCR_CONFIG.get(key) or CHECKED_VCR_CONFIG.get(key)
                value = _value_of(child, where)
                if key in FALSE_ONLY_VCR_CONFIG and not _is_false(value):
                    advice = f"only False is accepted: {FALSE_ONLY_VCR_CONFIG[key]}"
                if key == "allowed_hosts" and (pattern := _regex_host(value)) is not None:
                    advice = (
                        f"the regex {pattern!r} is not a plain host name: list the hosts "
                        "(names, *.wildcards, addresses) in agent_allowed_hosts instead"
                    )
                if advice is not None:
                    self._finding(where, f"vcr_config[{key!r}]: {advice}")

    def _configure_hook(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for child in ast.walk(node):
            if not isinstance(child, ast.Call) or not isinstance(child.func, ast.Attribute):
                continue
            if child.func.attr in ("register_serializer", "register_persister"):
                self._finding(
                    child,
                    f"vcr.{child.func.attr} has no equivalent in pytest_recording_configure "
                    "(only register_matcher is honoured): remove the call; cassettes are "
                    "YAML or JSON files in the cassette folder",
                )

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "use_cassette":
            self._evidence(VCRPY, node, f"{_name(func)}(...)")
            self._finding(node, _use_cassette_advice(node))
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = _name(node)
        if name.endswith("mark.vcr"):
            self._evidence(RECORDING, node, "@pytest.mark.vcr", marker=True)
        elif name.endswith(("mark.default_cassette", "mark.block_network")):
            self._evidence(RECORDING, node, f"@pytest.{name.split('.', 1)[-1]}")
        if name.endswith("mark.block_network"):
            self._finding(
                node,
                "@pytest.mark.block_network is pytest-recording's: a replaying agent test "
                "has the network blocked already; a test that is not an agent test is not "
                "blocked (mark it @pytest.mark.vcr or @pytest.mark.agent), and its "
                "allowed_hosts go in @pytest.mark.agent(allowed_hosts=[...]) as host names",
            )
        self.generic_visit(node)


def _value_of(container: ast.AST, key: ast.AST) -> ast.AST | None:
    if isinstance(key, ast.keyword):
        return key.value
    if isinstance(container, ast.Dict) and key in container.keys:
        return container.values[container.keys.index(key)]
    return None


def _regex_host(value: ast.AST | None) -> str | None:
    """The first of a list of ``allowed_hosts`` regexes that is not a plain host name."""
    items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
    for item in items:
        if not (isinstance(item, ast.Constant) and isinstance(item.value, str)):
            continue
        text = item.value.strip().removeprefix("^").removesuffix("$")
        for prefix in (r".*\.", r"(.*\.)?", r".+\."):
            text = text.removeprefix(prefix)
        if re.search(r"[\\^$*+?()\[\]{}|/\s]", re.sub(r"\\([.\-])", "", text)):
            return item.value
    return None


def _is_false(value: ast.AST | None) -> bool:
    return isinstance(value, ast.Constant) and value.value in (False, None, 0)


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return _name(node.func)
    return "?"


def _use_cassette_advice(node: ast.Call) -> str:
    first = node.args[0] if node.args else None
    path = first.value if isinstance(first, ast.Constant) else None
    cassette = f'"{path}"' if isinstance(path, str) else '"<the cassette file>"'
    return (
        f"{_name(node.func)}(...) is vcrpy's own context: mark the test "
        f"@pytest.mark.agent(cassette={cassette}) instead (a path relative to the cassette "
        "folder, or absolute) and remove the with-block or decorator"
    )
