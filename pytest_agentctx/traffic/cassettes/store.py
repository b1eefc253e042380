"""Cassette files on disk: reading (cached, in every format), dumping and writing them.

:func:`load_cassette` reads a cassette file, of the package's format (:mod:`.fileformat`)
or vcrpy's YAML (:mod:`.vcr`: pytest-recording, vcrpy, pydantic-ai's ``parsed_body``
variant, gzip ``!!binary`` bodies, pretty-printed bodies, so existing cassettes replay
without conversion), within the limits of :mod:`pytest_agentctx._untrusted`. A file is
parsed once per process while it is unchanged; a YAML one once per machine in a pytest
session (:mod:`.readcache`).

:func:`write_cassette` writes atomically (a temporary file renamed over the old one), in
the package's format or vcrpy's; the lock that serialises writes across processes, and the
markers of what a run wrote, are in :mod:`.runs`.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_agentctx._files import atomic_write_text
from pytest_agentctx._untrusted import LimitExceeded, NotAFile, read_untrusted
from pytest_agentctx.traffic.cassettes.fileformat import (
    FORMAT_NAME,
    Interaction,
    from_native,
    native_document,
)
from pytest_agentctx.traffic.errors import CassetteFormatError

if TYPE_CHECKING:
    from pytest_agentctx.redaction.redactor import Redactor


def _parse(text: str, path: Path) -> object:
    where = str(path)
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except RecursionError:
            raise CassetteFormatError(
                str(LimitExceeded(where, "JSON nested deeper than its parser reads", "depth"))
            ) from None
        except ValueError as exc:  # not JSON, or a number of too many digits
            raise CassetteFormatError(
                f"{where}: not valid JSON ({exc}). Restore it from version control or "
                "re-record it with pytest --agent-record."
            ) from None
    try:
        import yaml

        from pytest_agentctx.traffic.cassettes.yamlread import load
    except ImportError:
        raise CassetteFormatError(
            f"{where}: reading YAML cassettes needs PyYAML. Run: pip install pyyaml"
        ) from None
    try:
        return load(text, where)  # what yaml's safe loader gives, faster
    except LimitExceeded as exc:
        raise CassetteFormatError(str(exc)) from None
    except (yaml.YAMLError, ValueError, OverflowError, RecursionError) as exc:
        raise CassetteFormatError(
            f"{where}: not valid YAML ({exc}). Restore it from version control or "
            "re-record it with pytest --agent-record."
        ) from None


def parse_cassette(text: str, path: Path) -> list[Interaction]:
    """The interactions in a cassette's text (native or vcrpy format)."""
    data = _parse(text, path)
    if data is None:
        return []
    if not isinstance(data, Mapping) or not isinstance(data.get("interactions", []), list):
        raise CassetteFormatError(
            f"{path}: expected a mapping with an 'interactions' list, got "
            f"{type(data).__name__}. Is this a cassette?"
        )
    if data.get("cassette") == FORMAT_NAME:
        return from_native(data, str(path))
    from pytest_agentctx.traffic.cassettes.vcr import from_vcr

    return from_vcr(data, str(path))


#: The most recently loaded cassettes, oldest first (dicts keep insertion order).
_cache: dict[Path, tuple[int, int, list[Interaction]]] = {}
#: How many parsed cassettes stay cached: enough for the tests that share a cassette
#: (parametrized cases, repeats) to parse it once, without holding every cassette of a long
#: session in memory, where the garbage collector would scan them on every full pass.
CACHE_SIZE = 32


def load_cassette(path: Path, *, redactor: Redactor | None = None) -> list[Interaction]:
    """The interactions of the cassette at ``path`` (``[]`` if there is none).
    ``redactor``: the reading test's, which decides whether a YAML cassette may be cached
    (:mod:`.readcache`).

    Parsed files are cached by modification time and size, so tests that share a
    cassette parse it once per process; the :data:`CACHE_SIZE` most recently used stay.
    In a pytest session, a YAML cassette is also cached across processes, by its content
    (:mod:`.readcache`).
    """
    try:
        stat = path.stat()
    except (FileNotFoundError, NotADirectoryError):  # under a file: there can be none
        return []
    except OSError as exc:
        raise _unreadable(path, exc) from None
    cached = _cache.pop(path, None)
    if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
        _cache[path] = cached  # now the most recently used
        return list(cached[2])
    try:
        raw = read_untrusted(path)
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CassetteFormatError(
            f"{path}: not UTF-8 text. A compressed cassette (.yaml.gz) must be unpacked first."
        ) from None
    except OSError as exc:
        raise _unreadable(path, exc) from None
    except LimitExceeded as exc:
        raise CassetteFormatError(str(exc)) from None
    with paused_gc():
        if path.suffix == ".json":
            interactions = parse_cassette(text, path)
        else:
            interactions = _read_yaml(path, raw, text, redactor)
    _cache[path] = (stat.st_mtime_ns, stat.st_size, interactions)
    while len(_cache) > CACHE_SIZE:
        del _cache[next(iter(_cache))]
    return list(interactions)


def _read_yaml(
    path: Path, raw: bytes, text: str, redactor: Redactor | None = None
) -> list[Interaction]:
    """The interactions of the YAML cassette at ``path`` (its bytes ``raw``, decoded
    ``text``): from its entry in the read cache when one holds them, else parsed (and
    cached, unless ``redactor``, the reading test's, or the session's, finds a secret in
    them): see :mod:`.readcache`."""
    from pytest_agentctx.traffic.cassettes.readcache import read_entry, write_entry

    cached = read_entry(path, raw)
    if cached is not None:
        return cached
    interactions = parse_cassette(text, path)
    write_entry(path, raw, interactions, redactor)
    return interactions


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many objects that all stay alive.

    Parsing a cassette creates hundreds of thousands of dicts and strings at once; each
    burst of allocations starts a collection that scans them (and the whole heap) without
    finding anything to free. Pausing it halves the load time of a large cassette.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def dump_cassette(interactions: list[Interaction], path: Path, *, style: str = "native") -> str:
    """The text of a cassette in the package's format (JSON, or YAML by extension), or in
    vcrpy's YAML format with ``style="vcr"`` (see :mod:`.vcr`)."""
    if style == "vcr":
        from pytest_agentctx.traffic.cassettes.vcr import dump_vcr

        return dump_vcr(interactions)
    data = native_document(interactions)
    if path.suffix in (".yaml", ".yml"):
        import yaml

        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        text: str = yaml.dump(
            data, Dumper=dumper, sort_keys=True, allow_unicode=True, default_flow_style=False
        )
        return text
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _unreadable(path: Path, exc: OSError) -> CassetteFormatError:
    if isinstance(exc, NotAFile):
        return CassetteFormatError(
            f"{path}: is {exc.kind}, not a regular file, so it is not read: a cassette is a "
            "file (a symbolic link to one is followed). Replace it with the cassette file "
            "(restore it from version control, or record it: pytest --agent-record)."
        )
    reason = exc.strerror or str(exc)
    return CassetteFormatError(
        f"{path}: cannot be read ({reason}). Make it readable by the user running pytest "
        "(or restore it from version control), then run pytest again."
    )


def forget(path: Path) -> None:
    """Drop the parsed copy of the cassette at ``path``: the next load reads the file."""
    _cache.pop(path, None)


def write_cassette(path: Path, interactions: list[Interaction], *, style: str = "native") -> None:
    """Write atomically: a temporary file beside ``path``, flushed, then renamed over it;
    ``style`` as for :func:`dump_cassette`.

    Temporary files of ``path`` that a killed process left are removed (see
    :func:`~pytest_agentctx._files.remove_stale_temporaries`)."""
    atomic_write_text(path, dump_cassette(interactions, path, style=style))
    _cache.pop(path, None)
