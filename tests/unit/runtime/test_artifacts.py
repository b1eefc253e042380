"""Unit tests for pytest_agentctx.runtime.artifacts: the store, workspace
escapes, changes, tools."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_agentctx.context.clock import StepClock
from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.doubles.ids import SequentialIds
from pytest_agentctx.runtime.agent import Agent
from pytest_agentctx.runtime.artifacts import (
    ARTIFACT_TOOLS,
    ARTIFACTS_DEP,
    ArtifactChanges,
    ArtifactRef,
    ArtifactStore,
    LocalArtifactStore,
    TrackedArtifactStore,
    list_artifacts,
    normalize_artifact_path,
    read_artifact,
    write_artifact,
)
from pytest_agentctx.runtime.errors import ArtifactError, ArtifactNotFound, ArtifactPathError
from pytest_agentctx.runtime.tools import RunContext

HELLO_SHA = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"


@pytest.fixture
def store(tmp_path: Path) -> LocalArtifactStore:
    return LocalArtifactStore(tmp_path / "workspace")


def run_context(artifacts: Any) -> RunContext:
    return RunContext(
        agent=Agent(name="researcher", model="openai:gpt-4o-mini"),
        iteration=1,
        tool_call=ToolCall(id="call_1", name="write_artifact", arguments={}),
        clock=StepClock(),
        ids=SequentialIds(),
        deps={ARTIFACTS_DEP: artifacts} if artifacts is not None else {},
    )


# -- references ---------------------------------------------------------------------------


def test_a_reference_holds_path_sha256_and_size_never_the_content() -> None:
    ref = ArtifactRef.of("notes/a.md", b"hello")

    assert (ref.to_dict(), ref.version, str(ref)) == (
        {"path": "notes/a.md", "sha256": HELLO_SHA, "size": 5},
        HELLO_SHA[:12],
        f"notes/a.md (5 bytes, sha256 {HELLO_SHA[:12]})",
    )


def test_the_local_store_satisfies_the_protocol(store: LocalArtifactStore) -> None:
    assert isinstance(store, ArtifactStore)


# -- write, read, list, delete ------------------------------------------------------------


def test_write_returns_the_reference_and_read_returns_the_text(
    store: LocalArtifactStore,
) -> None:
    ref = store.write("notes/findings.md", "héllo\r\nworld")

    assert (ref.path, ref.size, store.read("notes/findings.md")) == (
        "notes/findings.md",
        len("héllo\r\nworld".encode()),
        "héllo\r\nworld",
    )


def test_write_replaces_an_artifact(store: LocalArtifactStore) -> None:
    store.write("a.md", "one")

    store.write("a.md", "two")

    assert store.read("a.md") == "two"


def test_paths_are_normalised(store: LocalArtifactStore) -> None:
    ref = store.write("notes//./a.md", "x")

    assert (ref.path, store.read("notes/a.md")) == ("notes/a.md", "x")


def test_list_gives_references_sorted_by_path(store: LocalArtifactStore) -> None:
    store.write("b.md", "b")
    store.write("a/z.md", "z")
    store.write("a/y.md", "y")

    assert [ref.path for ref in store.list()] == ["a/y.md", "a/z.md", "b.md"]


def test_list_keeps_the_paths_starting_with_the_prefix(store: LocalArtifactStore) -> None:
    store.write("notes/a.md", "a")
    store.write("notes2.md", "b")
    store.write("report.md", "c")

    assert ([r.path for r in store.list("notes/")], [r.path for r in store.list("notes")]) == (
        ["notes/a.md"],
        ["notes/a.md", "notes2.md"],
    )


def test_delete_removes_the_artifact(store: LocalArtifactStore) -> None:
    store.write("a.md", "x")

    store.delete("a.md")

    assert (store.list(), store.exists("a.md")) == ([], False)


def test_reading_a_missing_artifact_lists_what_exists(store: LocalArtifactStore) -> None:
    store.write("a.md", "x")

    with pytest.raises(ArtifactNotFound, match=r"No artifact at 'b.md'. The workspace holds: a.md"):
        store.read("b.md")


def test_deleting_a_missing_artifact_is_an_error(store: LocalArtifactStore) -> None:
    with pytest.raises(ArtifactNotFound, match="holds: nothing yet"):
        store.delete("a.md")


def test_reading_a_folder_is_not_found(store: LocalArtifactStore) -> None:
    store.write("notes/a.md", "x")

    with pytest.raises(ArtifactNotFound, match="No artifact at 'notes'"):
        store.read("notes")


def test_writing_over_a_folder_is_refused(store: LocalArtifactStore) -> None:
    store.write("notes/a.md", "x")

    with pytest.raises(ArtifactError, match="that path is a folder"):
        store.write("notes", "x")


def test_writing_below_a_file_is_refused(store: LocalArtifactStore) -> None:
    store.write("notes", "x")

    with pytest.raises(ArtifactError, match=r"'notes' is an artifact \(a file\), so it cannot"):
        store.write("notes/deep/a.md", "x")


def test_a_file_that_is_not_utf8_is_refused_by_read(store: LocalArtifactStore) -> None:
    (store.root / "image.png").write_bytes(b"\x89PNG")

    with pytest.raises(ArtifactError, match=r"'image.png' is not UTF-8 text \(byte 0 of 4\)"):
        store.read("image.png")


def test_refusal_messages_hold_no_absolute_path(store: LocalArtifactStore, tmp_path: Path) -> None:
    (store.root / "link.md").symlink_to(tmp_path / "secret.txt")

    with pytest.raises(ArtifactPathError) as caught:
        store.write("link.md", "x")
    assert str(tmp_path) not in str(caught.value)


def test_content_must_be_text(store: LocalArtifactStore) -> None:
    with pytest.raises(ArtifactError, match=r"content is bytes; expected text.*json.dumps"):
        store.write("a.md", b"x")  # type: ignore[arg-type]


def test_a_failed_write_leaves_the_old_artifact_and_no_temporary_file(
    store: LocalArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.write("a.md", "old")

    def broken_replace(source: Any, target: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        store.write("a.md", "new")
    monkeypatch.undo()

    assert (store.read("a.md"), sorted(p.name for p in store.root.iterdir())) == ("old", ["a.md"])


def test_the_store_creates_its_root(tmp_path: Path) -> None:
    LocalArtifactStore(tmp_path / "deep" / "workspace")

    assert (tmp_path / "deep" / "workspace").is_dir()


def test_a_root_that_cannot_be_created_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")

    with pytest.raises(ArtifactError, match="Cannot create the artifact workspace"):
        LocalArtifactStore(tmp_path / "file" / "workspace")


# -- workspace escapes --------------------------------------------------------------------

ESCAPES = {
    "absolute": ("/etc/passwd", "it is absolute"),
    "parent": ("../outside.md", "it contains '..'"),
    "nested parent": ("notes/../../outside.md", "it contains '..'"),
    "trailing parent": ("notes/..", "it contains '..'"),
    "NUL byte": ("a\x00.md", "it contains a NUL byte"),
    "drive letter": ("C:/Windows/win.ini", "it starts with a drive letter"),
    "drive relative": ("c:win.ini", "it starts with a drive letter"),
    "backslash parent": ("..\\outside.md", "it contains a backslash"),
    "UNC": ("\\\\server\\share\\a.md", "it contains a backslash"),
    "control character": ("a\n.md", "it contains the character '\\n'"),
    "stream": ("a.md:hidden", "it contains the character ':'"),
    "empty": ("", "it is empty"),
    "blank": ("   ", "it is empty"),
}


@pytest.mark.parametrize(("path", "problem"), ESCAPES.values(), ids=ESCAPES.keys())
@pytest.mark.parametrize("operation", ["write", "read", "delete", "exists"])
def test_malformed_or_escaping_paths_are_refused_by_every_operation(
    store: LocalArtifactStore, operation: str, path: str, problem: str
) -> None:
    call = getattr(store, operation)
    arguments = (path, "x") if operation == "write" else (path,)

    with pytest.raises(ArtifactPathError, match=re.escape(problem)):
        call(*arguments)


#: The empty prefix is allowed: it lists everything.
PREFIX_ESCAPES = {name: case for name, case in ESCAPES.items() if name != "empty"}


@pytest.mark.parametrize(("path", "problem"), PREFIX_ESCAPES.values(), ids=PREFIX_ESCAPES.keys())
def test_malformed_or_escaping_prefixes_are_refused_by_list(
    store: LocalArtifactStore, path: str, problem: str
) -> None:
    with pytest.raises(ArtifactPathError, match=re.escape(problem)):
        store.list(path)


def test_a_refused_path_writes_nothing_outside(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "workspace")

    with pytest.raises(ArtifactPathError):
        store.write("../outside.md", "x")
    assert not (tmp_path / "outside.md").exists()


def test_a_path_that_is_not_a_string_is_refused(store: LocalArtifactStore) -> None:
    with pytest.raises(ArtifactPathError, match=r"is a PosixPath|is a WindowsPath"):
        store.write(Path("a.md"), "x")  # type: ignore[arg-type]


@pytest.mark.parametrize("path", [".", "./", "a/"])
def test_a_path_naming_a_folder_or_the_workspace_is_refused(
    store: LocalArtifactStore, path: str
) -> None:
    with pytest.raises(ArtifactPathError, match=r"names the workspace itself|names a folder"):
        store.write(path, "x")


def test_a_symlinked_file_pointing_outside_is_refused(
    store: LocalArtifactStore, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (store.root / "link.md").symlink_to(secret)

    with pytest.raises(ArtifactPathError, match="a symbolic link leads it out of the workspace"):
        store.read("link.md")


def test_writing_through_a_symlinked_file_pointing_outside_changes_nothing_outside(
    store: LocalArtifactStore, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (store.root / "link.md").symlink_to(secret)

    with pytest.raises(ArtifactPathError):
        store.write("link.md", "overwritten")
    assert secret.read_text() == "top secret"


def test_a_symlinked_folder_pointing_outside_is_refused_and_nothing_is_created(
    store: LocalArtifactStore, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (store.root / "shared").symlink_to(outside, target_is_directory=True)

    with pytest.raises(ArtifactPathError, match="symbolic link"):
        store.write("shared/deep/a.md", "x")
    assert list(outside.iterdir()) == []


def test_a_symlink_to_the_workspace_itself_is_refused(store: LocalArtifactStore) -> None:
    (store.root / "self").symlink_to(store.root, target_is_directory=True)

    with pytest.raises(ArtifactPathError, match="symbolic link"):
        store.read("self")


def test_a_loop_of_symlinks_is_refused(store: LocalArtifactStore) -> None:
    (store.root / "a").symlink_to(store.root / "b")
    (store.root / "b").symlink_to(store.root / "a")

    with pytest.raises(ArtifactPathError, match="cannot be resolved"):
        store.read("a")


def test_a_symlink_that_stays_inside_is_followed(store: LocalArtifactStore) -> None:
    store.write("real.md", "inside")
    (store.root / "alias.md").symlink_to(store.root / "real.md")

    assert store.read("alias.md") == "inside"


def test_list_skips_links_that_lead_outside(store: LocalArtifactStore, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("x")
    (store.root / "link.md").symlink_to(tmp_path / "secret.txt")
    store.write("a.md", "y")

    assert [ref.path for ref in store.list()] == ["a.md"]


@pytest.mark.parametrize(
    ("path", "clean"), [("a//b/./c.md", "a/b/c.md"), ("./a.md", "a.md"), ("a.md", "a.md")]
)
def test_normalize_artifact_path_cleans_harmless_forms(path: str, clean: str) -> None:
    assert normalize_artifact_path(path) == clean


# -- changes ------------------------------------------------------------------------------


def test_changes_record_created_modified_and_deleted_sorted_by_path(
    tmp_path: Path,
) -> None:
    first = LocalArtifactStore(tmp_path / "w")
    first.write("kept.md", "same")
    first.write("edited.md", "v1")
    first.write("gone.md", "x")
    store = LocalArtifactStore(tmp_path / "w")  # a new store: these existed before it

    store.write("z-new.md", "new")
    store.write("a-new.md", "new")
    store.write("edited.md", "v2")
    store.write("kept.md", "same")
    store.delete("gone.md")

    match store.changes():
        case ArtifactChanges(
            created=(ArtifactRef(path="a-new.md"), ArtifactRef(path="z-new.md")),
            modified=(ArtifactRef(path="edited.md"),),
            deleted=("gone.md",),
        ):
            pass
        case other:
            pytest.fail(f"unexpected changes: {other!r}")


def test_an_artifact_created_then_deleted_is_no_change(store: LocalArtifactStore) -> None:
    store.write("tmp.md", "x")
    store.delete("tmp.md")

    assert (store.changes(), bool(store.changes())) == (ArtifactChanges(), False)


def test_an_artifact_written_twice_is_created_once_with_its_last_version(
    store: LocalArtifactStore,
) -> None:
    store.write("a.md", "one")
    last = store.write("a.md", "two")

    assert store.changes().to_dict() == {
        "created": [last.to_dict()],
        "modified": [],
        "deleted": [],
    }


def test_a_tracked_store_records_only_its_own_changes(store: LocalArtifactStore) -> None:
    store.write("before.md", "v1")
    researcher = TrackedArtifactStore(store)
    writer = TrackedArtifactStore(store)

    researcher.write("findings.md", "facts")
    researcher.write("before.md", "v2")
    writer.write("draft.md", "text")

    assert (
        [r.path for r in researcher.changes().created],
        [r.path for r in researcher.changes().modified],
        [r.path for r in writer.changes().created],
        store.read("findings.md"),
    ) == (["findings.md"], ["before.md"], ["draft.md"], "facts")


def test_a_tracked_store_records_deletions_and_passes_reads_through(
    store: LocalArtifactStore,
) -> None:
    store.write("old.md", "x")
    tracked = TrackedArtifactStore(store)

    tracked.delete("old.md")

    assert (tracked.changes().deleted, tracked.list(), isinstance(tracked, ArtifactStore)) == (
        ("old.md",),
        [],
        True,
    )


def test_a_tracked_store_needs_a_store() -> None:
    with pytest.raises(ArtifactError, match=r"needs an ArtifactStore.*got str"):
        TrackedArtifactStore("workspace")  # type: ignore[arg-type]


# -- tools --------------------------------------------------------------------------------


async def test_write_artifact_saves_and_answers_with_the_reference(
    store: LocalArtifactStore,
) -> None:
    text = await write_artifact.invoke({"path": "a.md", "content": "hello"}, run_context(store))

    assert (text, store.read("a.md")) == (
        f"Saved a.md (5 bytes, sha256 {HELLO_SHA[:12]}).",
        "hello",
    )


async def test_read_artifact_answers_with_the_content(store: LocalArtifactStore) -> None:
    store.write("a.md", "hello")

    assert await read_artifact.invoke({"path": "a.md"}, run_context(store)) == "hello"


async def test_list_artifacts_answers_one_line_per_artifact(store: LocalArtifactStore) -> None:
    store.write("notes/a.md", "hello")
    store.write("b.md", "hi")

    text = await list_artifacts.invoke({"prefix": "notes/"}, run_context(store))

    assert text == f"notes/a.md (5 bytes, sha256 {HELLO_SHA[:12]})"


async def test_list_artifacts_says_when_there_is_none(store: LocalArtifactStore) -> None:
    assert (
        await list_artifacts.invoke({}, run_context(store)),
        await list_artifacts.invoke({"prefix": "x/"}, run_context(store)),
    ) == ("No artifacts.", "No artifacts under 'x/'.")


async def test_the_tools_explain_how_to_give_them_a_store() -> None:
    with pytest.raises(ArtifactError, match=r"deps=\{'artifacts': LocalArtifactStore"):
        await read_artifact.invoke({"path": "a.md"}, run_context(None))


async def test_the_tools_refuse_escaping_paths(store: LocalArtifactStore) -> None:
    with pytest.raises(ArtifactPathError, match=re.escape("it contains '..'")):
        await write_artifact.invoke({"path": "../x.md", "content": "x"}, run_context(store))


def test_the_tool_schemas_hide_the_run_context() -> None:
    names: dict[str, list[str]] = {}
    for t in ARTIFACT_TOOLS:
        found = t.parameters["properties"]
        assert isinstance(found, dict)
        names[t.name] = sorted(found)
    assert names == {
        "write_artifact": ["content", "path"],
        "read_artifact": ["path"],
        "list_artifacts": ["prefix"],
    }
