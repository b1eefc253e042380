"""Malicious inputs: cassettes, read-cache entries and reports from a stranger, read by
``pytest`` (replaying) and by the ``pytest-agentctx`` command, each in a real subprocess
limited to 1 GiB of address space and a timeout.

Every file is made by the test itself: YAML alias bombs, nesting past the limit, bodies
whose ``content-encoding`` inflates to gigabytes, a cassette that is a link to
``/dev/zero`` or a FIFO, a read-cache entry that is a FIFO or was edited, reports nested
deep, with huge numbers or ``Infinity``, and text with terminal escapes. Each must end in
bounded time and memory with a clear message (the file, the limit, what to do), exit code
2 for the command where docs/cli.md promises it, and never a raw control character on the
terminal.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import json
import os
import re
import resource
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from support.inner import INNER_ADDOPTS

from pytest_agentctx._untrusted import Limits
from pytest_agentctx.traffic.cassettes import readcache

REPO = Path(__file__).resolve().parents[2]
#: The address space each subprocess may use: enough for pytest and the SDKs, far less
#: than any bomb below would take.
MEMORY = 1024**3
#: Seconds any subprocess may take.
TIMEOUT = 120
LIMITS = Limits()
URL = "http://127.0.0.1:9/v1/chat/completions"
REQUEST = {"model": "gpt-4o-mini"}
ESCAPES = "\x1b]52;c;cGF3bmVk\x07\x1b[2J\x08\x9b"

TEST_MODULE = f"""
import httpx
import pytest


@pytest.mark.agent(cassette="CASSETTE")
def test_replay(agent_cassette):
    with httpx.Client() as client:
        reply = client.post("{URL}", json={{"model": "gpt-4o-mini"}})
    assert reply.json()["answer"] == "Sunny."
"""


def _limited() -> None:  # pragma: no cover - runs in the child, before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PY_COLORS": "0",
        "COLUMNS": "200",
        "XDG_CONFIG_HOME": str(project.parent / f"{project.name}-config"),
    }
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT"):
        env.pop(name, None)
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
    return subprocess.run(
        [sys.executable, *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        errors="surrogateescape",
        timeout=TIMEOUT,
        preexec_fn=_limited,
        check=False,
    )


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(project, "-m", "pytest", "-p", "no:randomly", "-q", "--tb=short", *args)


def _command(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(project, "-m", "pytest_agentctx", *args)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / "cassettes").mkdir(parents=True)
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return folder


def _replaying(project: Path, name: str) -> Path:
    """A test replaying the cassette ``cassettes/<name>``; the cassette's path."""
    (project / "test_inner.py").write_text(TEST_MODULE.replace("CASSETTE", name), "utf-8")
    return project / "cassettes" / name


def _native(*interactions: dict[str, object]) -> str:
    return json.dumps({"cassette": "pytest-agentctx", "version": 1, "interactions": interactions})


def _interaction(
    body: object = None, headers: dict[str, str] | None = None, url: str = URL
) -> dict[str, object]:
    return {
        "request": {
            "method": "POST",
            "url": url,
            "headers": {},
            "body": {"json": {"model": "gpt-4o-mini"}},
        },
        "response": {
            "status": 200,
            "headers": headers or {"content-type": "application/json"},
            "body": body if body is not None else {"json": {"answer": "Sunny."}},
        },
    }


def _limit_message(where: str, what: str, field: str) -> str:
    """The message of a limit that ``what`` in the file ``where`` went past."""
    option = {
        "file_bytes": "agent_max_file_bytes",
        "body_bytes": "agent_max_body_bytes",
        "depth": "agent_max_depth",
        "alias_nodes": "agent_max_alias_nodes",
    }[field]
    return (
        f"{where}: {what}, past the limit {option} = {getattr(LIMITS, field)}. Files from an "
        f"unknown source are refused past it; if you trust this file, raise {option} in the "
        "pytest ini file"
    )


def _flat(text: str) -> str:
    """Output with pytest's line wrapping undone (a long message may span lines)."""
    return " ".join(text.split())


def _shows(output: str, message: str) -> bool:
    """Whether ``output`` holds ``message``, in which ``<N>`` stands for any number."""
    pattern = re.escape(" ".join(message.split())).replace("<N>", "[0-9]+")
    return re.search(pattern, _flat(output)) is not None


# -- YAML: alias bombs and nesting -------------------------------------------------------


def _alias_bomb(levels: int = 10) -> str:
    """A "billion laughs" document: 9**levels values from a kilobyte of aliases."""
    lines = ["bomb:", '  a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    lines += [
        "cassette: pytest-agentctx",
        "version: 1",
        "interactions:",
        f"- request: {{method: POST, url: '{URL}', headers: {{}}, body: {{json: {REQUEST}}}}}",
        f"  response: {{status: 200, headers: {{}}, body: {{json: *a{levels - 1}}}}}",
    ]
    return "\n".join(lines) + "\n"


def _deep_yaml(depth: int) -> str:
    return "interactions: []\nbomb: " + "[" * depth + "]" * depth + "\n"


YAML_BOMBS = [
    pytest.param(
        _alias_bomb,
        "YAML aliases repeating at least <N> values",
        "alias_nodes",
        id="billion laughs",
    ),
    pytest.param(
        functools.partial(_deep_yaml, 300),  # libyaml itself stops at 1,000
        "lists or mappings nested 201 deep",
        "depth",
        id="nested 300 deep",
    ),
]


@pytest.mark.parametrize(("make", "what", "field"), YAML_BOMBS)
def test_a_yaml_bomb_is_refused_by_pytest(
    project: Path, make: Callable[[], str], what: str, field: str
) -> None:
    cassette = _replaying(project, "bomb.yaml")
    cassette.write_text(make(), encoding="utf-8")
    assert cassette.stat().st_size < 1_300 or field == "depth"

    result = _pytest(project)

    assert result.returncode == 1, result.stdout + result.stderr
    assert _shows(result.stdout, _limit_message(str(cassette), what, field))


@pytest.mark.parametrize(("make", "what", "field"), YAML_BOMBS)
def test_a_yaml_bomb_is_refused_by_cassettes_show_and_check(
    project: Path, make: Callable[[], str], what: str, field: str
) -> None:
    cassette = project / "cassettes" / "bomb.yaml"
    cassette.write_text(make(), encoding="utf-8")

    shown = _command(project, "cassettes", "show", str(cassette))
    checked = _command(project, "cassettes", "check", "cassettes")

    assert shown.returncode == 2, shown.stdout + shown.stderr
    assert _shows(shown.stderr, _limit_message(str(cassette), what, field))
    assert checked.returncode == 1, checked.stdout + checked.stderr  # a finding: unreadable
    assert "unreadable cassettes: 1" in checked.stdout
    assert _shows(checked.stdout, _limit_message("cassettes/bomb.yaml", what, field))


# -- bodies that inflate to gigabytes ----------------------------------------------------

#: Uncompressed size of one piece of a bomb; pieces are repeated (gzip members, zstd
#: frames) to reach gigabytes from a few megabytes.
_PIECE = 64 * 1024 * 1024


@functools.cache
def _bomb(encoding: str) -> bytes:
    zeros = bytes(_PIECE)
    if encoding == "gzip":
        return gzip.compress(zeros, compresslevel=9, mtime=0) * 32  # 2 GiB
    if encoding == "deflate":
        compressor = zlib.compressobj(9)
        out = [compressor.compress(zeros) for _ in range(32)]  # 2 GiB, one stream
        return b"".join(out) + compressor.flush()
    if encoding == "br":
        brotli = pytest.importorskip("brotli")
        return bytes(brotli.compress(bytes(4 * _PIECE), quality=1))  # 256 MiB
    zstandard = pytest.importorskip("zstandard")
    return bytes(zstandard.ZstdCompressor(level=3).compress(zeros)) * 32  # 2 GiB


def _vcr_bomb(encoding: str) -> str:
    data = base64.encodebytes(_bomb(encoding)).decode("ascii")
    body = "\n".join(f"        {line}" for line in data.splitlines())
    return f"""\
interactions:
- request:
    body: '{{"model": "gpt-4o-mini"}}'
    headers:
      content-type:
      - application/json
    method: POST
    uri: {URL}
  response:
    body:
      string: !!binary |
{body}
    headers:
      content-encoding:
      - {encoding}
      content-type:
      - application/json
    status:
      code: 200
      message: OK
version: 1
"""


ENCODINGS = ["gzip", "deflate", "br", "zstd"]


def _body_message(where: str, encoding: str, kind: str = "a body") -> str:
    limit = LIMITS.body_bytes
    what = f"{kind} with a content-encoding {encoding!r} decoding to more than {limit} bytes"
    return _limit_message(where, what, "body_bytes")


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_compression_bomb_is_refused_by_pytest(project: Path, encoding: str) -> None:
    cassette = _replaying(project, "bomb.yaml")
    cassette.write_text(_vcr_bomb(encoding), encoding="utf-8")

    result = _pytest(project)

    assert result.returncode == 1, result.stdout + result.stderr
    assert _shows(result.stdout, _body_message(f"{cassette}#0", encoding))


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_compression_bomb_is_refused_by_cassettes_show_and_check(
    project: Path, encoding: str
) -> None:
    cassette = project / "cassettes" / "bomb.yaml"
    cassette.write_text(_vcr_bomb(encoding), encoding="utf-8")

    shown = _command(project, "cassettes", "show", str(cassette))
    checked = _command(project, "cassettes", "check", "cassettes")

    assert shown.returncode == 2, shown.stdout + shown.stderr
    assert _shows(shown.stderr, _body_message(f"{cassette}#0", encoding))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert _shows(checked.stdout, _body_message("cassettes/bomb.yaml#0", encoding))


def test_a_bomb_kept_with_its_content_encoding_is_never_served_to_the_client(
    project: Path,
) -> None:
    """A body stored encoded, its content-encoding kept: the client would inflate it."""
    cassette = _replaying(project, "kept.json")
    body = {"base64": base64.b64encode(_bomb("gzip")).decode("ascii")}
    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    cassette.write_text(_native(_interaction(body, headers)), encoding="utf-8")

    result = _pytest(project)

    assert result.returncode == 1, result.stdout + result.stderr
    assert _shows(result.stdout, _body_message(f"{cassette}#0", "gzip", "a response body"))


# -- files that are not files ------------------------------------------------------------


def test_a_cassette_linked_to_dev_zero_is_refused(project: Path) -> None:
    cassette = _replaying(project, "zero.json")
    cassette.symlink_to("/dev/zero")

    result = _pytest(project)
    shown = _command(project, "cassettes", "show", str(cassette))

    message = (
        f"{cassette}: is a character device, not a regular file, so it is not read: a "
        "cassette is a file (a symbolic link to one is followed)."
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert message in _flat(result.stdout)
    assert shown.returncode == 2, shown.stdout + shown.stderr
    assert message in _flat(shown.stderr)


def test_a_cassette_that_is_a_fifo_is_refused_without_waiting(project: Path) -> None:
    cassette = _replaying(project, "fifo.yaml")
    os.mkfifo(cassette)

    result = _pytest(project)

    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{cassette}: is a FIFO, not a regular file, so it is not read" in _flat(result.stdout)


def test_a_link_to_a_cassette_file_is_followed(project: Path) -> None:
    cassette = _replaying(project, "linked.json")
    real = project / "elsewhere.json"
    real.write_text(_native(_interaction()), encoding="utf-8")
    cassette.symlink_to(real)

    result = _pytest(project)

    assert result.returncode == 0, result.stdout + result.stderr


def _vcr_cassette(answer: str) -> str:
    return f"""\
interactions:
- request:
    body: '{{"model": "gpt-4o-mini"}}'
    headers:
      content-type:
      - application/json
    method: POST
    uri: {URL}
  response:
    body:
      string: '{{"answer": "{answer}"}}'
    headers:
      content-type:
      - application/json
    status:
      code: 200
      message: OK
version: 1
"""


def _entry(project: Path, cassette: Path) -> Path:
    folder = project / ".pytest_cache" / "d" / readcache.FOLDER_NAME
    return readcache.entry_path(folder, cassette)


def test_a_read_cache_entry_that_is_a_fifo_is_never_waited_on(project: Path) -> None:
    cassette = _replaying(project, "cached.yaml")
    cassette.write_text(_vcr_cassette("Sunny."), encoding="utf-8")
    assert _pytest(project).returncode == 0
    entry = _entry(project, cassette)
    entry.unlink()
    os.mkfifo(entry)

    result = _pytest(project)

    assert result.returncode == 0, result.stdout + result.stderr


def test_an_edited_read_cache_entry_with_its_checksum_recomputed_is_not_believed(
    project: Path,
) -> None:
    """An attacker who can write the cache (a poisoned CI cache) edits an entry and
    recomputes every digest of it: the entry is bound to the cassette by a key they do not
    have, so the cassette's own answer is replayed."""
    cassette = _replaying(project, "cached.yaml")
    cassette.write_text(_vcr_cassette("Sunny."), encoding="utf-8")
    assert _pytest(project).returncode == 0
    entry = _entry(project, cassette)
    head, _, payload = entry.read_bytes().partition(b"\n")
    forged = payload.replace(b"Sunny.", b"Rainy.")
    assert forged != payload
    old, new = hashlib.sha256(payload).hexdigest(), hashlib.sha256(forged).hexdigest()
    header = {k: new if v == old else v for k, v in json.loads(head).items()}
    entry.write_bytes(json.dumps(header).encode() + b"\n" + forged)

    result = _pytest(project)

    assert result.returncode == 0, result.stdout + result.stderr


def test_a_test_s_own_secret_never_reaches_the_read_cache(project: Path) -> None:
    secret = "tenant-secret-5f1e2d3c4b"
    cassette = _replaying(project, "cached.yaml")
    cassette.write_text(_vcr_cassette(f"Sunny. {secret}"), encoding="utf-8")
    module = project / "test_inner.py"
    module.write_text(
        module.read_text(encoding="utf-8").replace('== "Sunny."', f'== "Sunny. {secret}"')
        + f"""

@pytest.fixture
def agent_cassette_config():
    return {{"redact_values": ["{secret}"]}}
""",
        encoding="utf-8",
    )

    for _ in range(2):  # the first run would write the entry, the second read it
        result = _pytest(project)
        assert result.returncode == 0, result.stdout + result.stderr

    holding = [
        path.relative_to(project).as_posix()
        for path in project.rglob("*")
        if path.is_file() and secret.encode() in path.read_bytes()
    ]
    assert sorted(holding) == ["cassettes/cached.yaml", "test_inner.py"]  # the test's own


# -- text that would drive the terminal --------------------------------------------------


def test_escapes_in_a_stale_cassette_reach_the_terminal_as_escapes(project: Path) -> None:
    _replaying(project, "any.json")
    module = project / "test_inner.py"  # the test's own cassette: an unused recording fails
    module.write_text(
        module.read_text(encoding="utf-8").replace('@pytest.mark.agent(cassette="any.json")', ""),
        encoding="utf-8",
    )
    cassette = project / "cassettes" / "test_inner" / "test_replay.json"
    cassette.parent.mkdir()
    hostile = _interaction({"json": {"answer": ESCAPES}}, url=f"{URL}?q={ESCAPES}")
    cassette.write_text(_native(_interaction(), hostile), encoding="utf-8")

    result = _pytest(project)

    assert result.returncode == 1, result.stdout + result.stderr
    assert "StaleCassette" in result.stdout
    assert "\\x1b]52;c;cGF3bmVk\\x07\\x1b[2J\\x08\\x9b" in result.stdout
    for character in "\x1b\x07\x08\x9b":
        assert character not in result.stdout + result.stderr


def test_escapes_in_a_cassette_reach_cassettes_show_as_escapes(project: Path) -> None:
    cassette = project / "cassettes" / "hostile.json"
    hostile = _interaction({"json": {"answer": ESCAPES}}, url=f"{URL}?q={ESCAPES}")
    cassette.write_text(_native(hostile), encoding="utf-8")

    result = _command(project, "cassettes", "show", str(cassette))

    assert result.returncode == 0, result.stdout + result.stderr
    assert "\\x1b]52;c;cGF3bmVk\\x07" in result.stdout
    for character in "\x1b\x07\x08\x9b":
        assert character not in result.stdout + result.stderr


def _report(nodeid: str, **test: object) -> dict[str, object]:
    entry = {
        "nodeid": nodeid,
        "outcome": "failed",
        "suite": "unit",
        "stats": {"iterations": 1, "total_tokens": 10, "trajectory": []},
        **test,
    }
    return {"format": "pytest-agentctx-report", "version": 1, "tests": [entry]}


def test_escapes_in_a_report_reach_gate_and_check_as_escapes(project: Path) -> None:
    nodeid = f"test_inner.py::test_{ESCAPES}"
    cassette = {"path": "cassettes/hostile.json", "status": "unused", "unused": [0]}
    report = project / "report.json"
    report.write_text(json.dumps(_report(nodeid, cassette=cassette)), encoding="utf-8")

    gate = _command(project, "gate", str(report))
    check = _command(project, "cassettes", "check", "cassettes", "--report", str(report))

    assert gate.returncode == 1, gate.stdout + gate.stderr  # the report's test failed
    assert check.returncode == 1, check.stdout + check.stderr  # an unused interaction
    for result in (gate, check):
        assert "test_\\x1b]52;c;cGF3bmVk\\x07\\x1b[2J\\x08\\x9b" in result.stdout
        for character in "\x1b\x07\x08\x9b":
            assert character not in result.stdout + result.stderr


# -- reports: nesting, huge numbers, Infinity -------------------------------------------

_HEAD = '{"format": "pytest-agentctx-report", "version": 1, "tests": [], "x": '
HOSTILE_REPORTS = [
    pytest.param(
        _HEAD + "[" * 100_000 + "]" * 100_000 + "}",
        "JSON nested deeper than its parser reads, past the limit agent_max_depth = 200",
        id="nested 100,000 deep",
    ),
    pytest.param(
        _HEAD + "[" * 300 + "]" * 300 + "}",
        "lists or mappings nested 201 deep, past the limit agent_max_depth = 200",
        id="nested 300 deep",
    ),
    pytest.param(
        _HEAD + "1" * 5000 + "}",
        "is not a report's strict JSON (Exceeds the limit (4300 digits) for integer string "
        "conversion",
        id="5,000 digits",
    ),
    pytest.param(
        _HEAD + "Infinity}",
        "is not a report's strict JSON (Infinity is not a JSON number)",
        id="Infinity",
    ),
    pytest.param(
        _HEAD + "NaN}",
        "is not a report's strict JSON (NaN is not a JSON number)",
        id="NaN",
    ),
]
COMMANDS = [
    pytest.param(("gate", "REPORT"), id="gate"),
    pytest.param(("report", "html", "REPORT", "-o", "out.html"), id="report html"),
    pytest.param(("report", "merge", "REPORT", "-o", "out.json"), id="report merge"),
    pytest.param(("cassettes", "check", "cassettes", "--report", "REPORT"), id="check"),
]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("text", "message"), HOSTILE_REPORTS)
def test_a_hostile_report_exits_2_with_a_message(
    project: Path, command: tuple[str, ...], text: str, message: str
) -> None:
    report = project / "report.json"
    report.write_text(text, encoding="utf-8")

    result = _command(project, *(str(report) if arg == "REPORT" else arg for arg in command))

    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(f"pytest-agentctx: error: Report {report}")
    assert message in _flat(result.stderr)
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_a_report_that_is_a_fifo_exits_2_without_waiting(
    project: Path, command: tuple[str, ...]
) -> None:
    report = project / "report.json"
    os.mkfifo(report)

    result = _command(project, *(str(report) if arg == "REPORT" else arg for arg in command))

    assert result.returncode == 2, result.stdout + result.stderr
    assert f"Report {report} cannot be read (a FIFO, not a regular file)" in result.stderr


# -- the limits can be raised ------------------------------------------------------------


def test_a_raised_limit_reads_what_the_default_refuses(project: Path) -> None:
    cassette = _replaying(project, "deep.yaml")
    interaction = _interaction({"json": {"answer": "Sunny.", "deep": [[[[[]]]]]}})
    cassette.write_text(_native(interaction), "utf-8")  # JSON is YAML: nesting counted
    (project / "pytest.ini").write_text("[pytest]\nagent_max_depth = 5\n", encoding="utf-8")
    refused = _pytest(project)
    (project / "pytest.ini").write_text("[pytest]\nagent_max_depth = 20\n", encoding="utf-8")

    allowed = _pytest(project)

    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "lists or mappings nested 6 deep, past the limit agent_max_depth = 5" in _flat(
        refused.stdout
    )
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr


def test_a_limit_that_is_not_a_number_is_a_usage_error(project: Path) -> None:
    (project / "pytest.ini").write_text("[pytest]\nagent_max_depth = deep\n", encoding="utf-8")
    _replaying(project, "any.json")

    result = _pytest(project)
    command = _command(project, "cassettes", "check", "cassettes")

    message = "agent_max_depth = 'deep': expected a whole number of 1 or more (the default is 200)"
    assert result.returncode == 4, result.stdout + result.stderr
    assert message in result.stderr
    assert command.returncode == 2, command.stdout + command.stderr
    assert message in command.stderr


def test_escapes_in_a_baseline_reach_the_session_s_gate_as_escapes(project: Path) -> None:
    cassette = _replaying(project, "any.json")
    cassette.write_text(_native(_interaction()), encoding="utf-8")
    baseline = project / "baseline.json"
    gone = {"path": "cassettes/gone.json", "status": "replayed", "unused": []}
    text = json.dumps(_report(f"test_gone.py::test_{ESCAPES}", cassette=gone))
    baseline.write_text(text, encoding="utf-8")

    result = _pytest(project, f"--agent-baseline={baseline}")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "in the baseline but not run: 1" in result.stdout
    assert "  test_gone.py::test_\\x1b]52;c;cGF3bmVk\\x07\\x1b[2J\\x08\\x9b" in result.stdout
    for character in "\x1b\x07\x08\x9b":
        assert character not in result.stdout + result.stderr
