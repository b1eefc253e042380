"""The project's pytest ini options, read the way pytest finds them, without a session.

The command reads the few options it shares with the plugin (``agent_cassette_dir``,
``agent_cassette_max_age``, ``agent_retired_models``, ``agent_secret_env`` and the baseline
tolerance): from the first of ``pytest.ini``, ``.pytest.ini``, ``pyproject.toml`` (with a
``[tool.pytest.ini_options]`` table), ``tox.ini`` (with ``[pytest]``) and ``setup.cfg``
(with ``[tool:pytest]``) in the current folder or the nearest folder above it that has
one, as pytest does. That folder is the rootdir: the report's cassette paths are relative
to it.
"""

from __future__ import annotations

import configparser
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_agentctx.exceptions import UsageError

_INI_SECTIONS = (
    ("pytest.ini", "pytest"),
    (".pytest.ini", "pytest"),
    ("pyproject.toml", None),
    ("tox.ini", "pytest"),
    ("setup.cfg", "tool:pytest"),
)


@dataclass(frozen=True)
class IniOptions:
    """The ini options of a project (``values``: name to text, a list as lines), the file
    they came from (``None``: no file) and the rootdir."""

    rootdir: Path
    path: Path | None = None
    values: Mapping[str, str] = field(default_factory=dict)

    def get(self, name: str, default: str = "") -> str:
        return self.values.get(name, default)

    def lines(self, name: str) -> list[str]:
        """A ``linelist`` option: its non-empty lines, stripped."""
        return [line.strip() for line in self.get(name).splitlines() if line.strip()]


def _toml_options(path: Path) -> dict[str, str] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(
            f"{path} cannot be read as TOML ({exc}); expected the project's pyproject.toml. "
            "Fix it, then run the command again."
        ) from None
    table = data.get("tool", {}).get("pytest", {}).get("ini_options")
    if not isinstance(table, dict):
        return None
    return {str(key): _text(value) for key, value in table.items()}


def _text(value: object) -> str:
    if isinstance(value, list):
        return "\n".join(str(item) for item in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _ini_options(path: Path, section: str) -> dict[str, str] | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError, configparser.Error) as exc:
        raise UsageError(
            f"{path} cannot be read as an ini file ({exc}). Fix it, then run the command again."
        ) from None
    if not parser.has_section(section):
        return None if path.name != "pytest.ini" else {}
    return {key: value.strip() for key, value in parser.items(section)}


def find_ini(start: Path | None = None) -> IniOptions:
    """The pytest ini options of the project around ``start`` (the current folder)."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        for name, section in _INI_SECTIONS:
            path = folder / name
            if not path.is_file():
                continue
            values = _toml_options(path) if section is None else _ini_options(path, section)
            if values is not None:
                return IniOptions(rootdir=folder, path=path, values=values)
    return IniOptions(rootdir=here)
