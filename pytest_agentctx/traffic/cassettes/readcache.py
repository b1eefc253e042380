"""YAML cassettes, once read, kept as JSON in pytest's cache folder.

Reading YAML in Python is slow: even with libyaml's C parser, PyYAML builds every value in
Python, and a cassette of 1,000 chat interactions takes a quarter of a second to read,
five times its JSON. So, in a pytest session, the interactions read from a YAML cassette
(the package's own or vcrpy's) are written as the package's JSON to pytest's cache folder,
``.pytest_cache/d/agentctx-cassettes/``, and the next process that reads the same file
reads that JSON instead.

- **Keyed by content.** An entry holds the SHA-256 of the cassette's bytes (with this
  reader's version): a cassette edited, checked out or re-recorded is a different key, and
  read from its YAML again. One entry per cassette path (the file's name is a hash of the
  path), for the cassettes under the session's rootdir only (not those of a test's
  temporary folder), and at most :data:`MAX_ENTRIES`, the least recently used removed
  beyond; ``pytest --cache-clear`` empties the folder with the rest of pytest's cache, and
  ``-p no:cacheprovider`` turns it off (nothing is cached then, outside a pytest session
  neither).
- **Nothing the cassette does not hold.** An entry is written only when the JSON gives back
  exactly the interactions the YAML gave (a YAML date, a binary value or an integer key,
  which JSON would change, keeps the cassette out of the cache), and only when the
  session's redactor finds nothing in it to hide (a secret value): such a cassette is not
  copied anywhere. The redactor is the test's (its ``redact_values`` included), so a value
  only one test calls secret keeps that cassette out of the cache too.
- **Secret headers by reference.** A secret header that is not ``REDACTED`` (the
  ``Authorization`` that vcrpy keeps by default) is written ``REDACTED`` in the entry,
  beside where its value is in the cassette's bytes (an offset and a length, under the
  MAC); reading the entry takes the value from the cassette itself. So the entry holds no
  secret and still gives the cassette's own headers. A value not in the file as it is
  (written with escapes), or also elsewhere in the entry (a body that echoes it), keeps
  the cassette out.
- **Never a different answer.** An entry is bound to the bytes of its cassette by a keyed
  MAC (HMAC-SHA-256 over the cassette's key and the entry's JSON) under a secret that is
  never in the cache folder: the ``PYTEST_AGENTCTX_CACHE_KEY`` environment variable when
  set (a CI secret, so that the jobs of a CI cache share entries), else 32 random bytes
  made once per machine in ``~/.config/pytest-agentctx/read-cache.key`` (mode 0600; under
  ``$XDG_CONFIG_HOME`` when set). A checksum alone would not do: whoever can write a
  cassette and its entry (a pull request, a poisoned CI cache) can recompute one, and
  make the entry answer something the reviewed cassette does not say. Without the
  secret, no entry can be made that is believed; an entry that is truncated, edited,
  unreadable, not a regular file (a FIFO is never waited on), of another version or of
  another machine's key is ignored (and replaced). Entries are written atomically (see
  :mod:`pytest_agentctx._files`), so ``pytest -n`` workers reading the same cassette never
  see half of one; a failed write (a read-only or full disk) leaves the cassette read from
  its YAML, as without a cache.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import hmac
import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_agentctx._untrusted import LimitExceeded, read_untrusted

if TYPE_CHECKING:
    from pytest_agentctx.redaction.redactor import Redactor
    from pytest_agentctx.traffic.cassettes.fileformat import Interaction

#: The folder under pytest's cache (``.pytest_cache/d/``) that holds the entries.
FOLDER_NAME = "agentctx-cassettes"
#: The version of the conversion from YAML: part of every key, so that entries written by
#: a reader that converted differently are never used.
READER = "pytest-agentctx-read-3"
#: The environment variable holding the key of the entries' MACs, if not the machine's.
KEY_ENV = "PYTEST_AGENTCTX_CACHE_KEY"

#: The most entries kept; beyond, the least recently used are removed when one is written.
MAX_ENTRIES = 2048
#: The name of an entry: a hash of its cassette's path.
_ENTRY_NAME = re.compile(r"[0-9a-f]{32}\.json")

#: Gives the cache folder (creating it), or ``None``: no cache.
_folder: Callable[[], Path] | None = None
#: Only the cassettes under this folder (the session's rootdir) are cached.
_root: Path | None = None
#: What ``_folder`` gave, once asked.
_made: Path | None = None

Setting = tuple[Callable[[], Path] | None, Path | None]


def use_folder(folder: Callable[[], Path] | None, root: Path | None = None) -> Setting:
    """Cache the YAML cassettes read from now on, those under ``root`` (all when it is
    ``None``), in the folder ``folder()`` gives (called once, when a YAML cassette is first
    read), or none; returns the setting it replaces (``use_folder(*previous)`` restores
    it)."""
    global _folder, _root, _made
    previous = (_folder, _root)
    _folder, _root, _made = folder, root, None
    return previous


def _cached(path: Path, raw: bytes = b"") -> bool:
    """Whether the cassette at ``path`` (whose bytes are ``raw``) is cached: a cache is set
    and holds its folder (the cassettes of a test's temporary folder are not: they would
    only pile up), and it is not written in JSON (a vcrpy cassette converted by
    :func:`~pytest_agentctx.traffic.cassettes.vcr.convert_vcr_yaml` reads as fast as an
    entry)."""
    return (
        _folder is not None
        and not raw.startswith(b"{")
        and (_root is None or path.absolute().is_relative_to(_root))
    )


def _folder_path() -> Path:
    global _made
    assert _folder is not None
    if _made is None:
        _made = _folder()
    return _made


def _key(raw: bytes) -> str | None:
    """The key of a cassette's bytes, or ``None`` when the reader cannot be known."""
    reader = _reader()
    if reader is None:
        return None
    digest = hashlib.sha256(reader)
    digest.update(raw)
    return digest.hexdigest()


@functools.cache
def _reader() -> bytes | None:
    """What the conversion from YAML depends on: this reader's version, PyYAML's, and the
    source of the modules that convert (so that an entry written by other code, an upgrade
    or a change to this package, is never used); ``None`` if a source cannot be read."""
    import yaml

    digest = hashlib.sha256(f"{READER}\0{yaml.__version__}\0".encode())
    # read by name, not imported: a cache hit needs none of them (vcr: vcrpy's format)
    for name in (
        "body.py",
        "fileformat.py",
        "store.py",
        "vcr.py",
        "yamlread.py",
        Path(__file__).name,
    ):
        try:
            digest.update(Path(__file__).with_name(name).read_bytes())
        except OSError:  # pragma: no cover - a package without its sources
            return None
    return digest.digest()


def _key_path() -> Path:
    """Where this machine's key of the entries' MACs is kept: outside every project."""
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config) / "pytest-agentctx" / "read-cache.key"


def _read_key(path: Path) -> bytes | None:
    key = read_untrusted(path, limit=4096)
    return key if len(key) >= 32 else None


def _machine_key() -> bytes | None:
    """The key of the entries' MACs (see the module), made on first use; ``None`` when
    there is none and none can be made (then nothing is cached)."""
    given = os.environ.get(KEY_ENV)
    if given:
        return given.encode("utf-8", "surrogateescape")
    path = _key_path()
    if path in _keys:
        return _keys[path]
    _keys[path] = key = _new_or_read_key(path)
    return key


#: The machine's key, by where it is kept, once read (or made) in this process.
_keys: dict[Path, bytes | None] = {}


def _new_or_read_key(path: Path) -> bytes | None:
    import secrets
    import uuid

    try:
        return _read_key(path)
    except FileNotFoundError:
        pass  # made below
    except (OSError, LimitExceeded):
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with open(fd, "wb") as handle:
                handle.write(secrets.token_bytes(32))
            with contextlib.suppress(FileExistsError):  # another process made it first
                os.link(temporary, path)
        finally:
            os.unlink(temporary)
        return _read_key(path)
    except (OSError, LimitExceeded):
        return None


def _mac(source: str, payload: bytes, refs: bytes = b"[]") -> str | None:
    """The MAC binding ``payload`` and ``refs`` (the secret headers' places, JSON) to the
    cassette bytes whose key is ``source``."""
    key = _machine_key()
    if key is None:
        return None
    mac = hmac.new(key, source.encode() + b"\n" + refs + b"\n", hashlib.sha256)
    mac.update(payload)  # not joined to the source: no copy of the payload
    return mac.hexdigest()


def mac(source: str, payload: bytes) -> str | None:
    """The MAC binding ``payload`` to ``source`` under this machine's key (see the module
    docstring), for other entries of pytest's cache folder the package must trust (the
    prices of :mod:`pytest_agentctx.reports.pricestore`); ``None`` when there is no key."""
    return _mac(source, payload)


#: A secret header kept by reference: the interaction's index, its side ("request" or
#: "response"), the header's name, and its value's parts: each word a place in the
#: cassette's bytes (``[start, length]`` of its UTF-8), the text between words as it is
#: (spaces, commas and semicolons only: how YAML folds a long value and how the values of
#: a repeated header are joined).
Ref = tuple[int, str, str, list[object]]
#: Where a header's value is cut into words and the text between them.
_GAPS = re.compile(r"([\s,;]+)")


def _refs_bytes(refs: list[Ref]) -> bytes:
    return json.dumps(refs, separators=(",", ":")).encode()


def _places(raw: bytes, value: str, found: dict[str, int]) -> list[object] | None:
    """The parts of ``value`` (see :data:`Ref`), or ``None`` when a word is not in
    ``raw`` as it is (written with escapes); ``found``: where each word was found before
    (the same values repeat from interaction to interaction)."""
    parts: list[object] = []
    for index, piece in enumerate(_GAPS.split(value)):
        if index % 2:
            parts.append(piece)
        elif piece:
            word = piece.encode("utf-8", "surrogatepass")
            start = found.get(piece)
            if start is None:
                start = found[piece] = raw.find(word)
            if start < 0:
                return None
            parts.append([start, len(word)])
    return parts


def _by_reference(
    raw: bytes, interactions: list[Interaction], redactor: Redactor
) -> tuple[list[Interaction], list[Ref]] | None:
    """``interactions`` with the value of each secret header that is not ``REDACTED``
    (``Authorization``, which vcrpy keeps by default; a cookie) replaced by ``REDACTED``,
    and where each value is in the cassette's bytes ``raw``: the entry holds the places,
    never the value, and the value is read back from the cassette itself. ``None`` when a
    value is not in ``raw`` as it is."""
    import dataclasses

    from pytest_agentctx.redaction.redactor import REDACTED

    kept: list[Interaction] = []
    refs: list[Ref] = []
    found: dict[str, int] = {}
    for index, interaction in enumerate(interactions):
        changes: dict[str, dict[str, str]] = {}
        for side in ("request", "response"):
            headers: dict[str, str] = getattr(interaction, f"{side}_headers")
            secret = [
                name
                for name, value in headers.items()
                if value != REDACTED and redactor.is_secret_header(name, value)
            ]
            if not secret:
                continue
            for name in secret:
                parts = _places(raw, headers[name], found)
                if parts is None:
                    return None
                refs.append((index, side, name, parts))
            changes[side] = {
                name: REDACTED if name in secret else value for name, value in headers.items()
            }
        if changes:
            interaction = dataclasses.replace(
                interaction,
                request_headers=changes.get("request", interaction.request_headers),
                response_headers=changes.get("response", interaction.response_headers),
            )
        kept.append(interaction)
    return kept, refs


def _value(raw: bytes, parts: object) -> str:
    """A header's value from its parts (:func:`_places`); ``ValueError`` for parts that
    are not such."""
    if not isinstance(parts, list):
        raise ValueError("parts")
    out = []
    for part in parts:
        if isinstance(part, str) and not _GAPS.sub("", part):
            out.append(part)
            continue
        start, length = part
        if not (type(start) is int and type(length) is int and start >= 0 and length > 0):
            raise ValueError("place")
        out.append(raw[start : start + length].decode("utf-8"))
    return "".join(out)


def _restore(interactions: list[Interaction], raw: bytes, refs: object) -> list[Interaction]:
    """``interactions`` read from an entry with their secret headers' values read back from
    the cassette's bytes ``raw`` (``refs``: :func:`_by_reference`'s places); ``ValueError``
    for places that are not such."""
    if not isinstance(refs, list):
        raise ValueError("refs")
    for index, side, name, parts in refs:
        if side not in ("request", "response") or type(index) is not int or index < 0:
            raise ValueError("ref")
        headers: dict[str, str] = getattr(interactions[index], f"{side}_headers")
        if name not in headers:
            raise ValueError("ref")
        headers[name] = _value(raw, parts)
    return interactions


def _mentions(payload: bytes, raw: bytes, refs: list[Ref]) -> bool:
    """Whether a token of a value kept by reference (a word of :data:`_LONG_WORD`
    characters or more, not a number nor a date) is also elsewhere in the entry's
    ``payload`` (a body that echoes it); each token looked for once."""
    tokens: set[bytes] = set()
    for _, _, _, parts in refs:
        for word in _GAPS.split(_value(raw, parts))[::2]:
            if len(word) >= _LONG_WORD and not _NOT_TOKEN.fullmatch(word):
                tokens.add(word.encode("utf-8", "surrogatepass"))
                tokens.add(json.dumps(word, ensure_ascii=False)[1:-1].encode())
    return any(token in payload for token in tokens)


#: The words of a secret header's value that must not be elsewhere in an entry: those
#: this long (a token; not ``Bearer``, ``path=/`` or a date).
_LONG_WORD = 16
_NOT_TOKEN = re.compile(r"[0-9:.+\-TZ]+")


def entry_path(folder: Path, path: Path) -> Path:
    """Where the entry of the cassette at ``path`` lives in ``folder``."""
    name = hashlib.sha256(str(path.absolute()).encode("utf-8", "surrogateescape")).hexdigest()
    return folder / f"{name[:32]}.json"


def read_entry(path: Path, raw: bytes) -> list[Interaction] | None:
    """The interactions cached for the cassette at ``path`` whose bytes are ``raw``, or
    ``None`` (no cache, no entry, an entry of other bytes, or one that is damaged)."""
    if not _cached(path, raw):
        return None
    from pytest_agentctx.traffic.cassettes.fileformat import from_native
    from pytest_agentctx.traffic.cassettes.matcher import read_json
    from pytest_agentctx.traffic.errors import CassetteFormatError

    try:
        entry = entry_path(_folder_path(), path)
        data = read_untrusted(entry)
        head, _, payload = data.partition(b"\n")
        header, key = json.loads(head), _key(raw)
        if not isinstance(header, dict):
            return None
        refs = header.get("refs", [])
        mac = None if key is None else _mac(key, payload, _refs_bytes(refs))
        if (
            mac is None
            or header.get("reader") != READER
            or header.get("source") != key
            or not isinstance(header.get("mac"), str)
            or not hmac.compare_digest(header["mac"], mac)
        ):
            return None
        document = read_json(payload)[0]
        if not isinstance(document, Mapping):
            return None  # not JSON (or not a document): a damaged entry
        interactions = _restore(from_native(document, str(path)), raw, refs)
        os.utime(entry)  # now the most recently used
        return interactions
    except (
        OSError,
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        RecursionError,
        CassetteFormatError,
        LimitExceeded,
    ):
        return None


def write_entry(
    path: Path, raw: bytes, interactions: list[Interaction], redactor: Redactor | None = None
) -> bool:
    """Cache ``interactions``, read from the cassette at ``path`` whose bytes are ``raw``;
    whether an entry was written (see the module's rules for when it is not). ``redactor``:
    the reading test's (the session's active one when ``None``)."""
    if not _cached(path, raw):
        return False
    from pytest_agentctx.redaction.active import active

    redactor = redactor or active()
    if redactor is None:
        return False  # outside a session, nothing tells what is secret: write nothing
    key = _key(raw)
    by_reference = _by_reference(raw, interactions, redactor)
    if key is None or by_reference is None:
        return False
    kept, refs = by_reference
    payload = _payload(kept)
    if payload is None or not _clean(payload, kept, redactor) or _mentions(payload, raw, refs):
        return False
    from pytest_agentctx._files import atomic_write_bytes
    from pytest_agentctx.traffic.cassettes.fileformat import from_native
    from pytest_agentctx.traffic.cassettes.matcher import read_json

    document = read_json(payload)[0]
    if not isinstance(document, Mapping):
        return False
    try:
        back = _restore(from_native(document, str(path)), raw, [list(ref) for ref in refs])
    except (ValueError, TypeError):  # pragma: no cover - the places were just found
        return False
    if back != interactions:
        return False  # JSON would change a value (a date, bytes, an integer key...)
    mac = _mac(key, payload, _refs_bytes(refs))
    if mac is None:
        return False  # no key, none can be made: nothing is cached
    header = {"reader": READER, "source": key, "mac": mac, "refs": refs}
    try:
        entry = entry_path(_folder_path(), path)
        # Not flushed to disk: a torn entry (a power cut) fails its checksum and is ignored.
        atomic_write_bytes(entry, json.dumps(header).encode() + b"\n" + payload, durable=False)
    except OSError:
        return False  # a read-only or full disk: the cassette is read from its YAML again
    _prune(entry.parent)
    return True


def _prune(folder: Path) -> None:
    """Remove the least recently used entries beyond :data:`MAX_ENTRIES` (of cassettes
    removed, renamed or read no more)."""
    try:
        with os.scandir(folder) as found:
            entries = [
                (entry.stat().st_mtime_ns, entry.path)
                for entry in found
                if _ENTRY_NAME.fullmatch(entry.name) and entry.is_file()
            ]
    except OSError:
        return
    entries.sort()
    for _, path in entries[: max(0, len(entries) - MAX_ENTRIES)]:
        with contextlib.suppress(OSError):
            os.remove(path)


def _payload(interactions: list[Interaction]) -> bytes | None:
    """The package's JSON document of ``interactions`` as UTF-8, or ``None`` when JSON has
    no form for one of its values. orjson writes it; :mod:`json` where orjson would not
    (an integer past 64 bits). A value that JSON would change (``NaN``, which orjson writes
    as ``null``; an integer key) is caught by the comparison of what the entry gives back
    (:func:`write_entry`)."""
    import orjson

    from pytest_agentctx.traffic.cassettes.fileformat import native_document
    from pytest_agentctx.traffic.cassettes.matcher import ORJSON_PLAIN

    document = native_document(interactions)
    try:
        return orjson.dumps(document, option=ORJSON_PLAIN)
    except TypeError:  # orjson.JSONEncodeError is one: let json try
        pass
    try:
        text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8")  # a lone surrogate cannot be written
    except (TypeError, ValueError, RecursionError):
        return None  # a value JSON has no form for (bytes, a date, a set...)


def _clean(payload: bytes, interactions: list[Interaction], redactor: Redactor) -> bool:
    """Whether ``redactor`` (the reading test's, or the session's) leaves every part of the
    entry as it is: its text, its JSON strings, its URLs, secret headers (``REDACTED``
    already) and binary bodies."""
    from pytest_agentctx.redaction.redactor import REDACTED

    text = payload.decode("utf-8")
    if redactor.text(text) != text:
        return False
    if any(redactor.url(url) != url for url in {i.url for i in interactions}):
        return False
    for interaction in interactions:
        for headers in (interaction.request_headers, interaction.response_headers):
            if any(
                value != REDACTED
                for name, value in headers.items()
                if redactor.is_secret_header(name, value)
            ):
                return False
        for body in (interaction.request_body, interaction.response_body):
            if body is None:
                continue
            if "base64" in body:
                raw = base64.b64decode(body["base64"])
                if redactor.binary(raw) != raw:
                    return False
            elif "multipart" in body:
                from pytest_agentctx.traffic.cassettes.multipart import redact_stored

                stored = body["multipart"]
                if redact_stored(stored, redactor.text, redactor.binary) != stored:
                    return False
            elif redactor.json(body) is not body:
                return False
    return True
