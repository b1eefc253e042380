"""Artifacts: files an agent writes to and reads from a workspace, referenced by path.

An :class:`ArtifactStore` writes, reads, lists and deletes text artifacts by relative path;
:class:`LocalArtifactStore` keeps them in a folder (the ``artifact_store`` fixture puts it
in the test's temporary directory). Writes are atomic, and a path that would leave the
workspace is refused with :class:`~pytest_agentctx.ArtifactPathError`: absolute paths, drive
letters, ``..``, backslashes, NUL and control characters, ``:`` and symbolic links that lead
outside.

Contexts hold references (:class:`ArtifactRef`: path, sha256, size), never contents. A store
records what was created, modified and deleted (:meth:`LocalArtifactStore.changes`);
:class:`TrackedArtifactStore` records the changes made through it alone, e.g. by one
sub-agent.

The built-in tools :func:`write_artifact`, :func:`read_artifact` and :func:`list_artifacts`
find the store in the run's dependencies under the key ``"artifacts"``
(``runtime.run(agent, input, deps={"artifacts": store})``).
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol, TypedDict, runtime_checkable

from pytest_agentctx._files import atomic_write_bytes
from pytest_agentctx.runtime.errors import ArtifactError, ArtifactNotFound, ArtifactPathError
from pytest_agentctx.runtime.tools import RunContext, Tool, tool

#: The key of ``RunContext.deps`` under which the artifact tools find the store.
ARTIFACTS_DEP = "artifacts"
_TEMP_PREFIX = ".agentctx-tmp-"
_DRIVE = re.compile(r"^[A-Za-z]:")
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f\\:]")


class ArtifactRefJSON(TypedDict):
    """An :class:`ArtifactRef` as JSON."""

    path: str
    sha256: str
    size: int


class ArtifactChangesJSON(TypedDict):
    """:class:`ArtifactChanges` as JSON."""

    created: list[ArtifactRefJSON]
    modified: list[ArtifactRefJSON]
    deleted: list[str]


@dataclass(frozen=True)
class ArtifactRef:
    """A reference to one version of an artifact: its path, sha256 of the bytes, size."""

    path: str
    sha256: str
    size: int

    @classmethod
    def of(cls, path: str, data: bytes) -> ArtifactRef:
        """The reference of ``data`` stored at ``path``."""
        return cls(path=path, sha256=hashlib.sha256(data).hexdigest(), size=len(data))

    @property
    def version(self) -> str:
        """A short version id: the first 12 hex digits of the sha256."""
        return self.sha256[:12]

    def to_dict(self) -> ArtifactRefJSON:
        """JSON-ready: ``{"path", "sha256", "size"}``."""
        return {"path": self.path, "sha256": self.sha256, "size": self.size}

    def __str__(self) -> str:
        return f"{self.path} ({self.size} bytes, sha256 {self.version})"


@dataclass(frozen=True)
class ArtifactChanges:
    """The artifacts created, modified (content changed) and deleted, each sorted by path.

    Compared with the state before the first change: a file written twice counts once, a
    file created and then deleted does not count, a rewrite with the same bytes is no
    modification.
    """

    created: tuple[ArtifactRef, ...] = ()
    modified: tuple[ArtifactRef, ...] = ()
    deleted: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.created or self.modified or self.deleted)

    def to_dict(self) -> ArtifactChangesJSON:
        """JSON-ready: the references created and modified, the paths deleted."""
        return {
            "created": [ref.to_dict() for ref in self.created],
            "modified": [ref.to_dict() for ref in self.modified],
            "deleted": list(self.deleted),
        }


@runtime_checkable
class ArtifactStore(Protocol):
    """What the artifact tools and the runtime ask of a store of text artifacts."""

    def write(self, path: str, content: str) -> ArtifactRef:
        """Create or replace the artifact at ``path``; returns its new reference."""
        ...

    def read(self, path: str) -> str:
        """The content of the artifact at ``path``."""
        ...

    def list(self, prefix: str = "") -> builtins.list[ArtifactRef]:
        """References of the artifacts whose path starts with ``prefix``, sorted by path."""
        ...

    def delete(self, path: str) -> None:
        """Remove the artifact at ``path``."""
        ...


def normalize_artifact_path(path: object, *, prefix: bool = False) -> str:
    """``path`` as a clean relative POSIX path, or :class:`ArtifactPathError`.

    ``a//b`` and ``a/./b`` become ``a/b``. Refused: non-strings, empty paths, absolute paths,
    drive letters, ``..``, backslashes, ``:``, NUL and other control characters. With
    ``prefix=True`` the empty string is allowed and a trailing ``/`` is kept.
    """
    if not isinstance(path, str):
        raise ArtifactPathError(
            f"Artifact path {path!r} is a {type(path).__name__}; expected a relative path as "
            "a string, such as 'notes/findings.md'."
        )
    if prefix and path == "":
        return ""
    problem = None
    bad = _FORBIDDEN.search(path)
    if not path.strip():
        problem = "it is empty"
    elif "\x00" in path:
        problem = "it contains a NUL byte"
    elif path.startswith("/"):
        problem = "it is absolute"
    elif _DRIVE.match(path):
        problem = "it starts with a drive letter"
    elif "\\" in path:
        problem = "it contains a backslash (use '/' between folders)"
    elif bad is not None:
        problem = f"it contains the character {bad.group()!r}"
    elif ".." in path.split("/"):
        problem = "it contains '..'"
    if problem is not None:
        raise ArtifactPathError(
            f"Artifact path {path!r} is refused: {problem}. Artifact paths are relative to "
            "the workspace and stay inside it, e.g. 'notes/findings.md'."
        )
    parts = [part for part in PurePosixPath(path).parts if part not in ("", ".")]
    if not parts:
        if prefix:
            return ""
        raise ArtifactPathError(
            f"Artifact path {path!r} names the workspace itself; give a file path such as "
            "'notes/findings.md'."
        )
    clean = "/".join(parts)
    if path.endswith("/"):
        if not prefix:
            raise ArtifactPathError(
                f"Artifact path {path!r} ends with '/', so it names a folder; give a file "
                "path such as 'notes/findings.md'."
            )
        clean += "/"
    return clean


class _ChangeLog:
    """The first and the latest reference of every path changed (``None``: no file)."""

    def __init__(self) -> None:
        self._before: dict[str, ArtifactRef | None] = {}
        self._after: dict[str, ArtifactRef | None] = {}

    def record(self, path: str, before: ArtifactRef | None, after: ArtifactRef | None) -> None:
        self._before.setdefault(path, before)
        self._after[path] = after

    def changes(self) -> ArtifactChanges:
        created: list[ArtifactRef] = []
        modified: list[ArtifactRef] = []
        deleted: list[str] = []
        for path in sorted(self._after):
            before, after = self._before[path], self._after[path]
            if before is None and after is not None:
                created.append(after)
            elif before is not None and after is None:
                deleted.append(path)
            elif before is not None and after is not None and before.sha256 != after.sha256:
                modified.append(after)
        return ArtifactChanges(tuple(created), tuple(modified), tuple(deleted))


class LocalArtifactStore:
    """An :class:`ArtifactStore` in a folder of the local filesystem (created if missing).

    Artifacts are UTF-8 text files under :attr:`root`, written atomically (a temporary
    file, then a rename). Every path is checked by :func:`normalize_artifact_path` and,
    after symbolic links are resolved, must still lie inside the root.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ArtifactError(
                f"Cannot create the artifact workspace {str(self.root)!r}: {exc}. Give "
                "LocalArtifactStore a folder that can be created and written."
            ) from exc
        self._resolved_root = self.root.resolve()
        self._log = _ChangeLog()

    def _locate(self, path: str) -> tuple[str, Path]:
        """The clean relative path and the absolute file path, checked to stay inside."""
        clean = normalize_artifact_path(path)
        target = self._resolved_root.joinpath(*clean.split("/"))
        try:
            resolved = target.resolve()
            looped = resolved.is_symlink()  # Python 3.13+ leaves a loop unresolved
        except (OSError, RuntimeError):  # Python 3.11 and 3.12 raise on a loop
            looped = True
        if looped:
            raise ArtifactPathError(
                f"Artifact path {path!r} cannot be resolved: it runs into a loop of "
                "symbolic links. Remove the links or use another path."
            )
        if not resolved.is_relative_to(self._resolved_root) or resolved == self._resolved_root:
            # no absolute path in the message: it may reach the model, and the context
            raise ArtifactPathError(
                f"Artifact path {path!r} is refused: a symbolic link leads it out of the "
                "workspace's files. Artifacts stay inside the workspace; remove the link or "
                "use another path."
            )
        return clean, target

    def _ref_at(self, clean: str, target: Path) -> ArtifactRef | None:
        try:
            return ArtifactRef.of(clean, target.read_bytes())
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def write(self, path: str, content: str) -> ArtifactRef:
        """Create or replace the artifact at ``path`` atomically; returns its reference."""
        if not isinstance(content, str):
            raise ArtifactError(
                f"write({path!r}, ...): content is {type(content).__name__}; expected text "
                "(str). Serialise data first, e.g. json.dumps(data)."
            )
        clean, target = self._locate(path)
        if target.is_dir():
            raise ArtifactError(
                f"write({clean!r}): that path is a folder of the workspace; give a file path "
                "inside it."
            )
        before = self._ref_at(clean, target)
        data = content.encode("utf-8")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            parts = clean.split("/")[:-1]
            prefixes = ("/".join(parts[: n + 1]) for n in range(len(parts)))
            blocking = next((p for p in prefixes if self._resolved_root.joinpath(p).is_file()), "")
            raise ArtifactError(
                f"write({clean!r}): {blocking!r} is an artifact (a file), so it cannot hold "
                "other artifacts. Choose another path."
            ) from None
        # the folders now exist: check again that no link in them leads outside
        self._locate(clean)
        atomic_write_bytes(target, data, temp_prefix=_TEMP_PREFIX)
        ref = ArtifactRef.of(clean, data)
        self._log.record(clean, before, ref)
        return ref

    def read(self, path: str) -> str:
        """The text of the artifact at ``path``."""
        clean, target = self._locate(path)
        try:
            data = target.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise self._not_found(clean) from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ArtifactError(
                f"Artifact {clean!r} is not UTF-8 text (byte {exc.start} of {len(data)}); "
                "artifacts are text. Store binary data elsewhere, or encode it (base64)."
            ) from None

    def list(self, prefix: str = "") -> builtins.list[ArtifactRef]:
        """References of the artifacts whose path starts with ``prefix`` (plain string
        prefix: ``"notes/"`` for a folder), sorted by path."""
        return self._all(normalize_artifact_path(prefix, prefix=True))

    def _all(self, prefix: str = "") -> builtins.list[ArtifactRef]:
        refs: builtins.list[ArtifactRef] = []
        for path in self._files():
            clean = path.relative_to(self._resolved_root).as_posix()
            if not clean.startswith(prefix):
                continue
            with contextlib.suppress(ArtifactPathError):
                _, target = self._locate(clean)  # skip links that lead outside
                ref = self._ref_at(clean, target)
                if ref is not None:
                    refs.append(ref)
        return sorted(refs, key=lambda ref: ref.path)

    def _files(self) -> Iterator[Path]:
        for folder, dirs, files in os.walk(self._resolved_root):
            dirs.sort()
            for name in sorted(files):
                if not name.startswith(_TEMP_PREFIX):
                    yield Path(folder, name)

    def delete(self, path: str) -> None:
        """Remove the artifact at ``path``."""
        clean, target = self._locate(path)
        before = self._ref_at(clean, target)
        if before is None:
            raise self._not_found(clean)
        target.unlink()
        self._log.record(clean, before, None)

    def exists(self, path: str) -> bool:
        """Whether an artifact is stored at ``path``."""
        _, target = self._locate(path)
        return target.is_file()

    def changes(self) -> ArtifactChanges:
        """What was created, modified and deleted through this store since it was made."""
        return self._log.changes()

    def _not_found(self, clean: str) -> ArtifactNotFound:
        paths = [ref.path for ref in self._all()]
        shown = ", ".join(paths[:20]) + (" ..." if len(paths) > 20 else "")
        return ArtifactNotFound(
            f"No artifact at {clean!r}. The workspace holds: {shown or 'nothing yet'}. "
            "Check the path, or write the artifact first."
        )

    def __repr__(self) -> str:
        return f"LocalArtifactStore({str(self.root)!r})"


class TrackedArtifactStore:
    """An :class:`ArtifactStore` that passes everything to ``store`` and records the
    changes made through it alone (:meth:`changes`): give one to each sub-agent to know
    what it created and modified, even when several write to the same workspace."""

    def __init__(self, store: ArtifactStore) -> None:
        if not isinstance(store, ArtifactStore):
            raise ArtifactError(
                f"TrackedArtifactStore needs an ArtifactStore (write, read, list, delete), "
                f"got {type(store).__name__}: {store!r}."
            )
        self.store = store
        self._log = _ChangeLog()

    def _current(self, clean: str) -> ArtifactRef | None:
        return next((ref for ref in self.store.list(clean) if ref.path == clean), None)

    def write(self, path: str, content: str) -> ArtifactRef:
        """Write through the inner store, recording the change."""
        clean = normalize_artifact_path(path)
        before = self._current(clean)
        ref = self.store.write(clean, content)
        self._log.record(ref.path, before, ref)
        return ref

    def read(self, path: str) -> str:
        """Read through the inner store."""
        return self.store.read(path)

    def list(self, prefix: str = "") -> builtins.list[ArtifactRef]:
        """List through the inner store."""
        return self.store.list(prefix)

    def delete(self, path: str) -> None:
        """Delete through the inner store, recording the change."""
        clean = normalize_artifact_path(path)
        before = self._current(clean)
        self.store.delete(clean)
        self._log.record(clean, before, None)

    def changes(self) -> ArtifactChanges:
        """What was created, modified and deleted through this wrapper."""
        return self._log.changes()

    def __repr__(self) -> str:
        return f"TrackedArtifactStore({self.store!r})"


def _store(ctx: RunContext, tool_name: str) -> ArtifactStore:
    store = ctx.deps.get(ARTIFACTS_DEP)
    if store is None or not isinstance(store, ArtifactStore):
        raise ArtifactError(
            f"{tool_name} needs an artifact store in the run's dependencies under "
            f"{ARTIFACTS_DEP!r}, got {store!r}. Run the agent with "
            "deps={'artifacts': LocalArtifactStore(path)} (in tests: the artifact_store "
            "fixture)."
        )
    return store


@tool
def write_artifact(path: str, content: str, ctx: RunContext) -> str:
    """Save text as an artifact in the workspace, replacing any artifact at that path.

    Args:
        path: Relative path inside the workspace, such as 'notes/findings.md'.
        content: The full text to save.
    """
    ref = _store(ctx, "write_artifact").write(path, content)
    return f"Saved {ref}."


@tool
def read_artifact(path: str, ctx: RunContext) -> str:
    """Read the text of an artifact in the workspace.

    Args:
        path: Relative path of the artifact, as list_artifacts shows it.
    """
    return _store(ctx, "read_artifact").read(path)


@tool
def list_artifacts(ctx: RunContext, prefix: str = "") -> str:
    """List the artifacts in the workspace, one per line with its size.

    Args:
        prefix: Only list paths starting with this text, such as 'notes/'.
    """
    refs = _store(ctx, "list_artifacts").list(prefix)
    if not refs:
        return f"No artifacts{f' under {prefix!r}' if prefix else ''}."
    return "\n".join(str(ref) for ref in refs)


#: The built-in artifact tools, to add to an agent: ``Agent(..., tools=[*ARTIFACT_TOOLS])``.
ARTIFACT_TOOLS: tuple[Tool[Callable[..., object]], ...] = (
    write_artifact,
    read_artifact,
    list_artifacts,
)
