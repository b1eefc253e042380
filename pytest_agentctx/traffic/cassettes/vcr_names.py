"""Cassette names as pytest-recording and pytest-vcr compute them (``agent_cassette_names``),
so a suite recorded through either tool finds its cassettes where they are.

* pytest-recording: ``<test file's folder>/cassettes/<module stem>/<Class.>name.yaml``, the
  characters ``<>?%*:|"'/\\`` of the name replaced by ``-``, a name too long for the file
  system cut and followed by ``...`` and its MD5 (:func:`recording_name`,
  :func:`recording_folder`, :func:`fit_name`);
* pytest-vcr: ``<test file's folder>/cassettes/<Class.>name.yaml``, the name as pytest gives
  it (:func:`vcr_name`, :func:`vcr_folder`).

The folder is the project's ``vcr_cassette_dir`` fixture's value when it has one (or
``cassette_library_dir`` from ``vcr_config``), the name its ``default_cassette_name``
(pytest-recording) or ``vcr_cassette_name`` (pytest-vcr) fixture's, or the
``default_cassette`` marker's: the plugin reads them, :func:`compat_path` joins them as vcrpy
does. A name that holds a secret is the one change: the secret is written ``REDACTED`` and
the name ends with ``~`` and a digest of the name (:func:`~pytest_agentctx.redaction.names.digest`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from pytest_agentctx.traffic.errors import CassetteConfigError

#: The values of ``agent_cassette_names``: the package's own names, and the two tools'.
NAMINGS = ("agentctx", "pytest-recording", "pytest-vcr")
#: The markers of pytest-recording (pytest-vcr's is ``vcr`` alone), with their descriptions.
RECORDING_MARKERS = {
    "vcr": "vcr(*extra_cassettes, **vcr_config): an agent test whose cassette is named as "
    "pytest-recording or pytest-vcr names it (agent_cassette_names).",
    "default_cassette": "default_cassette(name): the test's cassette name (pytest-recording's "
    "naming).",
    "block_network": "block_network(allowed_hosts=...): read from pytest-recording; the "
    "network is blocked while replaying anyway.",
    "allowed_hosts": "allowed_hosts: read from pytest-recording; use agent_allowed_hosts.",
}
#: The characters pytest-recording replaces with ``-`` in a cassette name.
_RECORDING_FORBIDDEN = "<>?%*:|\"'/\\"
#: The longest file name pytest-recording allows before it cuts one (the file system's).
try:
    MAX_FILENAME_LEN = os.pathconf(".", "PC_NAME_MAX")
except (AttributeError, ValueError, OSError):  # pragma: no cover - Windows
    MAX_FILENAME_LEN = 255


def parse_naming(value: str) -> str:
    """The naming of ``agent_cassette_names = value``, or a clear error naming the value and
    the choices."""
    naming = value.strip().lower() or "agentctx"
    if naming not in NAMINGS:
        raise CassetteConfigError(
            f"agent_cassette_names = {value!r}; expected one of {', '.join(NAMINGS)} (e.g. "
            "agent_cassette_names = pytest-recording for a suite whose cassettes "
            "pytest-recording recorded). Fix it in your pytest ini file."
        )
    return naming


def recording_name(class_name: str | None, test_name: str) -> str:
    """pytest-recording's default cassette name: ``Class.test_name[id]`` with each of
    ``<>?%*:|"'/\\`` replaced by ``-`` (spaces and other punctuation kept)."""
    name = f"{class_name}.{test_name}" if class_name else test_name
    for char in _RECORDING_FORBIDDEN:
        name = name.replace(char, "-")
    return name


def vcr_name(class_name: str | None, test_name: str) -> str:
    """pytest-vcr's cassette name: ``Class.test_name[id]`` as pytest gives it."""
    return f"{class_name}.{test_name}" if class_name else test_name


def recording_folder(module_path: Path) -> Path:
    """pytest-recording's ``vcr_cassette_dir``: ``cassettes/<module stem>`` beside the test
    file."""
    return module_path.parent / "cassettes" / module_path.stem


def vcr_folder(module_path: Path) -> Path:
    """pytest-vcr's ``vcr_cassette_dir``: ``cassettes`` beside the test file."""
    return module_path.parent / "cassettes"


def fit_name(name: str, suffix: str = ".yaml") -> str:
    """pytest-recording's cut of a name too long for a file: its start, ``...`` and the MD5
    of the whole name."""
    if len(name) + len(suffix) <= MAX_FILENAME_LEN:
        return name
    hashed = hashlib.md5(name.encode()).hexdigest()
    return f"{name[: MAX_FILENAME_LEN - len(suffix) - len(hashed) - 3]}...{hashed}"


def compat_path(
    folder: Path | str,
    name: str,
    *,
    suffix: str = ".yaml",
    redact: Callable[[str], str] | None = None,
) -> Path:
    """The cassette file ``name`` in ``folder`` as vcrpy joins them (``os.path.join``, so a
    ``/`` in a pytest-vcr name is a sub-folder, and an absolute name stays itself), with
    ``suffix`` added unless the name ends with it. A name holding a secret (``redact``
    changes it) gets the secret replaced and ``~`` and a digest of the name at its end."""
    if redact is not None:
        shown = redact(name)
        if shown != name:
            from pytest_agentctx.redaction.names import SEPARATOR, digest

            name = f"{shown}{SEPARATOR}{digest(name)}"
    joined = os.path.join(os.fspath(folder), name)
    if not joined.endswith(suffix):
        joined += suffix
    return Path(joined)
