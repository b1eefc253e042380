"""Reading and writing cassette files.

The package writes its own format: a JSON (default) or YAML document::

    {"cassette": "pytest-agentctx", "version": 1, "interactions": [
        {"request": {"method": "POST", "url": "...", "headers": {...}, "body": {"json": {...}}},
         "response": {"status": 200, "headers": {...}, "body": {"sse": [...]}},
         "test_id": "tests/test_weather.py::test_paris"}]}

Bodies are stored decoded and readable (see :mod:`.body`); keys are sorted; secrets were
redacted before anything was written. ``test_id``, the node id of the test that recorded
the interaction, is written in cassettes that several tests share
(``@pytest.mark.agent(cassette=...)``), so that each test replays, and re-records, its own
interactions; it is absent from a test's own cassette and from cassettes written before it
existed, which read as before (version 1 either way). ``"partial": true`` marks a streamed
response recorded in part: the agent stopped reading it without closing it, and the rest
could not be read when the test ended (see :class:`~.session.Cassette`).

Writes are atomic (a temporary file renamed over the old one) and serialised across
processes with a file lock, so ``pytest -n`` workers that record into one shared cassette
keep every interaction. Neither leaves files behind: see :func:`locked` and
:func:`mark_written`.

It also reads the vcrpy YAML cassettes other tools write (pytest-recording, vcrpy,
pydantic-ai's ``parsed_body`` variant, gzip ``!!binary`` bodies, pretty-printed bodies), so
existing cassettes replay without conversion.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentctx._files import (
    atomic_write_text,
    pid_running,
    remove_stale_temporaries,
    remove_stale_temporaries_under,
)
from pytest_agentctx._locks import hold, let_go, try_hold
from pytest_agentctx._untrusted import LimitExceeded, NotAFile, read_untrusted
from pytest_agentctx.traffic.cassettes.body import (
    Body,
    BodyTooLarge,
    UndecodableBody,
    body_bytes,
    decode_content,
)
from pytest_agentctx.traffic.errors import CassetteFormatError

if TYPE_CHECKING:
    from pytest_agentctx.redaction.redactor import Redactor

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "Interaction",
    "dump_cassette",
    "load_cassette",
    "end_runs",
    "locked",
    "mark_written",
    "native_document",
    "run_file",
    "run_marker",
    "sweep_folder",
    "sweep_tree",
    "write_cassette",
    "written_in_run",
]

FORMAT_NAME = "pytest-agentctx"
FORMAT_VERSION = 1


@dataclass
class Interaction:
    """One recorded request and its response, in stored form."""

    method: str
    url: str
    request_headers: dict[str, str]
    request_body: Body
    status: int
    response_headers: dict[str, str]
    response_body: Body
    #: Where it came from (``path#index``), for messages.
    origin: str = ""
    #: The node id of the test that recorded it, in a shared cassette; ``""`` when no test
    #: is known (a test's own cassette, or one written before test ids or by another tool).
    test_id: str = ""
    #: Whether the response is a stream recorded in part (the agent stopped reading it and
    #: it could not be read to its end when the test ended): replayed up to where it stops.
    partial: bool = False
    _request_json: Any = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "request": {
                "method": self.method,
                "url": self.url,
                "headers": self.request_headers,
                "body": self.request_body,
            },
            "response": {
                "status": self.status,
                "headers": self.response_headers,
                "body": self.response_body,
            },
        }
        if self.test_id:
            data["test_id"] = self.test_id
        if self.partial:
            data["partial"] = True
        return data

    @property
    def is_stream(self) -> bool:
        return bool(self.response_body and "sse" in self.response_body)


# -- reading -------------------------------------------------------------------------


def _headers(raw: Any) -> dict[str, str]:
    """Headers of any stored shape as a dict of lower-case names to strings."""
    if not raw:
        return {}
    items = raw.items() if isinstance(raw, dict | Mapping) else raw
    return {
        str(name).lower(): value if value.__class__ is str else _header_text(value)
        for name, value in items
    }


def _header_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


_BODY_KINDS = ("json", "sse", "text", "base64")


def _native_body(body: Any) -> Body:
    """A stored body, checked: ``None`` or a mapping with exactly one known kind."""
    if body is None:
        return None
    if body.__class__ is dict and len(body) == 1 and "json" in body:
        return body  # the common case, fresh from the parser: nothing to check or copy
    if not isinstance(body, Mapping) or len(body) != 1 or next(iter(body)) not in _BODY_KINDS:
        shown = sorted(body) if isinstance(body, Mapping) else type(body).__name__
        raise ValueError(f"a body is {shown}; expected null or one of {', '.join(_BODY_KINDS)}")
    kind, value = next(iter(body.items()))
    if kind == "sse" and not isinstance(value, list):
        raise ValueError(f"an sse body is {type(value).__name__}; expected a list of events")
    if kind in ("text", "base64") and not isinstance(value, str):
        raise ValueError(f"a {kind} body is {type(value).__name__}; expected a string")
    return dict(body)


def _test_id(value: Any) -> str:
    """A stored ``test_id``: a node id, or ``""`` when absent."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"test_id is {type(value).__name__}; expected a test's node id")
    return value


def _partial(value: Any) -> bool:
    """A stored ``partial`` flag: ``true``, or absent for a whole response."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValueError(f"partial is {type(value).__name__}; expected true or false")
    return value


def check_encoded(interaction: Interaction) -> None:
    """A response kept with its ``content-encoding`` (a body this package could not decode
    when it was recorded) is served as it is, for the client to decode: refused
    (:class:`CassetteFormatError`) when it decodes past the ``body_bytes`` limit, so that
    no client inflates a bomb. Only such responses are decoded here."""
    encoding = interaction.response_headers.get("content-encoding")
    if not encoding or not interaction.response_body:
        return
    try:
        decode_content(body_bytes(interaction.response_body), encoding)
    except BodyTooLarge as exc:
        what = f"a response body with a {exc}"
        raise CassetteFormatError(
            str(LimitExceeded(interaction.origin, what, "body_bytes"))
        ) from None
    except (UndecodableBody, ValueError):
        pass  # the client finds it undecodable, as it would the server's bytes


def _from_native(data: Mapping[str, Any], where: str) -> list[Interaction]:
    version = data.get("version")
    if version != FORMAT_VERSION:
        raise CassetteFormatError(
            f"{where}: cassette format version {version!r}; this pytest-agentctx reads version "
            f"{FORMAT_VERSION}. Re-record it: pytest --agent-record, or upgrade pytest-agentctx."
        )
    out = []
    for index, item in enumerate(data.get("interactions") or []):
        try:
            request, response = item["request"], item["response"]
            out.append(
                Interaction(
                    method=str(request["method"]).upper(),
                    url=str(request["url"]),
                    request_headers=_headers(request.get("headers")),
                    request_body=_native_body(request.get("body")),
                    status=int(response["status"]),
                    response_headers=_headers(response.get("headers")),
                    response_body=_native_body(response.get("body")),
                    origin=f"{where}#{index}",
                    test_id=_test_id(item.get("test_id")),
                    partial=_partial(item.get("partial")),
                )
            )
            check_encoded(out[-1])
        except (KeyError, TypeError, ValueError) as exc:
            raise CassetteFormatError(
                f"{where}: interaction #{index} is malformed ({type(exc).__name__}: {exc}); "
                "each needs request.method, request.url and response.status, bodies of "
                "the form {'json': ...}, {'sse': [...]}, {'text': ...} or {'base64': ...}, "
                "and, if it has one, a test_id that is a test's node id (a string) and a "
                "partial flag that is true or false. "
                "Fix the file or re-record it with pytest --agent-record."
            ) from None
    return out


def _parse(text: str, path: Path) -> Any:
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
        return _from_native(data, str(path))
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
            from pytest_agentctx.traffic.cassettes.readcache import read_yaml

            interactions = read_yaml(path, raw, text, redactor)
    _cache[path] = (stat.st_mtime_ns, stat.st_size, interactions)
    while len(_cache) > CACHE_SIZE:
        del _cache[next(iter(_cache))]
    return list(interactions)


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


# -- writing -------------------------------------------------------------------------


def native_document(interactions: list[Interaction]) -> dict[str, Any]:
    """The document of a cassette in the package's format, before it is written as text."""
    return {
        "cassette": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "interactions": [interaction.to_dict() for interaction in interactions],
    }


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


# -- locks and run markers -----------------------------------------------------------
#
# Both live in one folder under the system temp dir, so cassette folders never get lock
# files, and neither piles up there:
#
# * A lock file exists only while a process holds or waits for it (:func:`locked`); one
#   that a killed holder left is removed by the next process that locks it, or by
#   :func:`end_runs`.
# * A run marker (``runs/<run>/<cassette>``, an empty file) says that the test run
#   ``<run>`` wrote the cassette. Beside the markers, ``pid-<pid>`` names each process of
#   the run that wrote one (or another file of the run, :func:`run_file`: the xdist
#   workers' lists of integration tests). A run's folder is removed once no process of it
#   runs any more (:func:`end_runs`, when a session ends, and when a process first marks a
#   cassette), or
#   once it is :data:`RUN_MARKERS_KEPT_SECONDS` old (process ids get reused).

#: How long the markers of a run are kept at most, whatever its process ids say.
RUN_MARKERS_KEPT_SECONDS = 24 * 3600.0
#: Whether this process already swept the markers of ended runs.
_swept_runs = False


def _locks_folder(create: bool = True) -> Path:
    folder = Path(tempfile.gettempdir()) / "pytest-agentctx-locks"
    if create:
        folder.mkdir(parents=True, exist_ok=True)
    return folder


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _lock_path(path: Path) -> Path:
    return _locks_folder() / f"{_digest(str(path.resolve()))}.lock"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[Path]:
    """Hold an exclusive lock for ``path`` across processes (the lock lives in the temp dir,
    so cassette folders get no lock files). Yields the lock file's path.

    The lock file is removed when the lock is released, so the temp dir does not keep one
    per cassette ever written; :mod:`pytest_agentctx._locks` says how that stays safe for
    the processes that wait on it.
    """
    lock_file = _lock_path(path)
    held = hold(lock_file)
    try:
        yield lock_file
    finally:
        let_go(lock_file, held)


def _runs_folder() -> Path:
    return _locks_folder(create=False) / "runs"


def run_marker(path: Path, run_id: str) -> Path:
    """The marker saying that the test run ``run_id`` wrote the cassette ``path``."""
    return _runs_folder() / _digest(run_id) / _digest(str(path.resolve()))


def mark_written(path: Path, run_id: str) -> None:
    """Note that the test run ``run_id`` wrote ``path`` (see :func:`written_in_run`)."""
    if not _swept_runs:
        _sweep(keep=_digest(run_id))
    marker = run_marker(path, run_id)
    for attempt in range(3):
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            (marker.parent / f"pid-{os.getpid()}").touch()
            marker.touch()
            return
        except FileNotFoundError:  # another process removed the folder meanwhile
            if attempt == 2:
                raise


def run_file(run_id: str, name: str, *, writer: bool = True) -> Path:
    """The path of the file ``name`` in the folder of the test run ``run_id``, beside its
    run markers and removed with them. For a ``writer``, the folder is made, with this
    process's ``pid-<pid>`` (the folder is kept while one of its processes runs)."""
    folder = _runs_folder() / _digest(run_id)
    if writer:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"pid-{os.getpid()}").touch()
    return folder / name


def written_in_run(path: Path, run_id: str) -> bool:
    """Whether the test run ``run_id`` wrote ``path`` (:func:`mark_written`)."""
    return run_marker(path, run_id).exists()


def end_runs(run_id: str) -> None:
    """At the end of the test run ``run_id`` (in the process that ran it, or the xdist
    controller, once its workers have ended): remove its markers, and those of other runs
    that no process runs any more (killed ones), and lock files nobody holds."""
    _swept_folders.clear()  # a next session in this process (pytester) sweeps them again
    if not _locks_folder(create=False).is_dir():
        return
    shutil.rmtree(_runs_folder() / _digest(run_id), ignore_errors=True)
    _sweep(keep=None)


def _sweep(keep: str | None) -> None:
    """Remove the run folders (but ``keep``) whose processes all ended, or that are too old,
    and the lock files that a killed holder left."""
    global _swept_runs
    _swept_runs = True
    now = time.time()
    with contextlib.suppress(OSError):
        for folder in os.scandir(_runs_folder()):
            if folder.name != keep and _run_ended(folder, now):
                shutil.rmtree(folder.path, ignore_errors=True)
    with contextlib.suppress(OSError):
        for entry in os.scandir(_locks_folder(create=False)):
            if entry.name.endswith(".lock"):
                _remove_free_lock(Path(entry.path))
            elif entry.name.endswith(".run"):  # a marker of older versions, one per cassette
                with contextlib.suppress(OSError):
                    if entry.stat().st_mtime < now - RUN_MARKERS_KEPT_SECONDS:
                        os.unlink(entry.path)


def _run_ended(folder: os.DirEntry[str], now: float) -> bool:
    try:
        if folder.stat(follow_symlinks=False).st_mtime < now - RUN_MARKERS_KEPT_SECONDS:
            return True
        names = os.listdir(folder.path)
        pids = [int(n[4:]) for n in names if n.startswith("pid-") and n[4:].isdigit()]
    except (OSError, ValueError):
        return False
    # A folder without any process yet is being made: it is kept until it is old.
    return bool(pids) and not any(pid_running(pid) for pid in pids)


def _remove_free_lock(lock_file: Path) -> None:
    """Remove ``lock_file`` if nobody holds it: taking its lock first, as only a holder may
    remove it (see :func:`locked`; a process about to lock it tries again on a new file)."""
    try:
        held = try_hold(lock_file)
    except OSError:
        return
    if held is not None:
        let_go(lock_file, held)


#: The cassette folders this process cleared of temporary files in this session.
_swept_folders: set[Path] = set()


def sweep_folder(folder: Path) -> None:
    """Once per session: remove the temporary files that killed writes left in the
    cassette folder ``folder`` (see :func:`~pytest_agentctx._files.remove_stale_temporaries`),
    so a run that only replays clears them too."""
    if folder not in _swept_folders:
        _swept_folders.add(folder)
        remove_stale_temporaries(folder)


def sweep_tree(root: Path) -> None:
    """:func:`sweep_folder` of ``root`` and every folder under it (see
    :func:`~pytest_agentctx._files.remove_stale_temporaries_under`): the temporary files
    killed writes left beside cassettes this run does not load go too, and the folders of
    those it loads are not swept again."""
    remove_stale_temporaries_under(root, done=_swept_folders)


def write_cassette(path: Path, interactions: list[Interaction], *, style: str = "native") -> None:
    """Write atomically: a temporary file beside ``path``, flushed, then renamed over it;
    ``style`` as for :func:`dump_cassette`.

    Temporary files of ``path`` that a killed process left are removed (see
    :func:`~pytest_agentctx._files.remove_stale_temporaries`)."""
    atomic_write_text(path, dump_cassette(interactions, path, style=style))
    _cache.pop(path, None)
