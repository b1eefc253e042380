"""A test's cassette path and options under pytest-recording's or pytest-vcr's names
(``agent_cassette_names``): the project's ``vcr_cassette_dir``, ``default_cassette_name``,
``vcr_cassette_name`` and ``vcr_config`` fixtures read when it defines them (whether or not
the tool is installed), the ``vcr`` and ``default_cassette`` markers, and the path joined as
the tool joins it (:mod:`pytest_agentctx.traffic.cassettes.vcr_names`); ``vcr_config``
translated (:mod:`pytest_agentctx.traffic.cassettes.vcr_config`). Imported by ``_run`` for
the session's first agent test under those names.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from pytest_agentctx.traffic.cassettes.options import CassetteSettings
from pytest_agentctx.traffic.cassettes.vcr_config import (
    VcrOptions,
    check_hooks,
    merge_vcr_kwargs,
    translate_vcr_config,
)
from pytest_agentctx.traffic.cassettes.vcr_names import (
    compat_path,
    fit_name,
    recording_folder,
    recording_name,
    vcr_folder,
    vcr_name,
)
from pytest_agentctx.traffic.errors import CassetteConfigError

from ..keys import VCR_MATCHERS_KEY

_MISSING = object()


class VcrTest(NamedTuple):
    """A test's cassette folder and name under the tool's names, and its ``vcr_config``."""

    folder: Path | str
    name: str
    options: VcrOptions

    def path(self, redact: Callable[[str], str]) -> Path:
        """The cassette's path, a secret in its name redacted (``redact``)."""
        path = compat_path(self.folder, self.name, redact=redact)
        return path if path.is_absolute() else Path.cwd() / path


def _fixture(request: pytest.FixtureRequest, name: str) -> object:
    """The value of the project's fixture ``name``, or :data:`_MISSING` when no fixture of
    that name is visible to the test (a fixture that fails for another reason fails)."""
    try:
        return request.getfixturevalue(name)
    except pytest.FixtureLookupError as exc:
        if exc.argname != name:
            raise
        return _MISSING


def vcr_test(
    request: pytest.FixtureRequest, item: pytest.Item, settings: CassetteSettings
) -> VcrTest:
    """The cassette path and translated ``vcr_config`` of ``item`` under ``settings.names``
    (pytest-recording's or pytest-vcr's); a :class:`CassetteConfigError` names what cannot
    be honoured."""
    where = item.nodeid
    recording = settings.names == "pytest-recording"
    markers = list(item.iter_markers("vcr"))
    if not recording:  # pytest-vcr reads the closest marker only
        markers = markers[:1]
    vcr_config = _fixture(request, "vcr_config")
    config = {} if vcr_config is _MISSING or vcr_config is None else vcr_config
    if not isinstance(config, dict):
        raise CassetteConfigError(
            f"{where}: vcr_config returned {type(config).__name__} {config!r}; expected a "
            "dict of vcrpy options. Fix the fixture's return."
        )
    merged = merge_vcr_kwargs(config, [marker.kwargs for marker in markers])
    matchers = request.config.stash.get(VCR_MATCHERS_KEY, {})
    options = translate_vcr_config(merged, matchers=matchers, where=where)
    check_hooks(options.hooks, where=where)
    block = item.get_closest_marker("block_network")
    if block is not None and block.kwargs.get("allowed_hosts"):  # pytest-recording's marker
        hosts = {"allowed_hosts": block.kwargs["allowed_hosts"]}
        allowed = translate_vcr_config(hosts, matchers={}, where=where).allowed_hosts
        options = options._replace(allowed_hosts=(*options.allowed_hosts, *allowed))
    module_path = Path(str(item.path))
    cls = getattr(item, "cls", None)
    class_name = cls.__name__ if cls is not None else None
    folder = _fixture(request, "vcr_cassette_dir")
    if folder is _MISSING:
        folder = recording_folder(module_path) if recording else vcr_folder(module_path)
    if recording:
        name = _recording_name(request, item, class_name)
        extras = [arg for marker in markers for arg in marker.args]
        if extras:
            raise CassetteConfigError(
                f"{where}: @pytest.mark.vcr({', '.join(map(repr, extras))}) names extra "
                "cassettes, which pytest-agentctx does not read beside the test's own; merge "
                "their recordings into the test's cassette (or give the test one of them with "
                "@pytest.mark.agent(cassette='path/to/file.yaml')) and remove the marker's "
                "arguments."
            )
    else:
        value = _fixture(request, "vcr_cassette_name")
        name = vcr_name(class_name, item.name) if value is _MISSING else _text(value, where)
    if options.library_dir is not None:
        folder = options.library_dir
    if not isinstance(folder, str | os.PathLike):
        raise CassetteConfigError(
            f"{where}: vcr_cassette_dir returned {type(folder).__name__} {folder!r}; "
            "expected a folder path (str or Path). Fix the fixture's return."
        )
    return VcrTest(os.fspath(folder), name, options)


def _recording_name(
    request: pytest.FixtureRequest, item: pytest.Item, class_name: str | None
) -> str:
    """pytest-recording's ``default_cassette_name``: the project's fixture's value, else the
    ``default_cassette`` marker's, else the test's name; cut to fit a file name."""
    value = _fixture(request, "default_cassette_name")
    if value is not _MISSING:
        return fit_name(_text(value, item.nodeid))
    marker = item.get_closest_marker("default_cassette")
    if marker is not None:
        if not marker.args or not isinstance(marker.args[0], str) or not marker.args[0]:
            raise CassetteConfigError(
                f"{item.nodeid}: @pytest.mark.default_cassette{marker.args!r} has no name; "
                "expected the cassette's name, e.g. @pytest.mark.default_cassette('shared'). "
                "Fix the marker."
            )
        return fit_name(marker.args[0])
    return fit_name(recording_name(class_name, item.name))


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise CassetteConfigError(
            f"{where}: the cassette name fixture returned {type(value).__name__} {value!r}; "
            "expected a non-empty str. Fix the fixture's return."
        )
    return value
