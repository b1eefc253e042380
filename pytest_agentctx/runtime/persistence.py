"""Saving a run to JSON and loading it back, to continue the conversation later.

The file holds a schema name and version, the agent's name and model (to check that the
run is loaded for the right agent), the run's status, error and output, and the context.
Tools are not serialised: they belong to the agent you pass to :func:`load_run`. Saving
is atomic, so a crash never leaves a half-written file, and a round trip is exact: the
loaded context has its metadata keys in their original order, and saving it again writes
the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from pytest_agentctx._files import atomic_write_text
from pytest_agentctx.context.model import AgentContext
from pytest_agentctx.runtime.agent import Agent, RunResult
from pytest_agentctx.runtime.errors import (
    PersistenceError as PersistenceError,
)

SCHEMA = "pytest-agentctx/run"
SCHEMA_VERSION = 1


def save_run(path: str | Path, result: RunResult) -> Path:
    """Write ``result`` to ``path`` as JSON (atomically); returns the path."""
    if not isinstance(result, RunResult):
        raise PersistenceError(
            f"save_run() saves the RunResult of a run, got {type(result).__name__}: {result!r:.80}."
        )
    target = Path(path)
    # The envelope's keys in sorted order; the context's as its JSON form has them (fields
    # in declaration order, metadata and arguments in the order they were added), so a
    # loaded run is the same context, byte for byte, and saves to the same file again.
    data: dict[str, object] = {
        "agent": {"model": result.agent.model, "name": result.agent.name},
        "context": result.context.model_dump(mode="json"),
        "error": result.error,
        "output": result.output,
        "schema": SCHEMA,
        "status": result.status,
        "version": SCHEMA_VERSION,
    }
    atomic_write_text(target, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return target


def load_run(path: str | Path, agent: Agent, *, check_agent: bool = True) -> RunResult:
    """Read a run saved by :func:`save_run`, for ``agent`` (which supplies the tools).

    With ``check_agent`` (the default), the saved agent name and model must match.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PersistenceError(
            f"{source}: no such file. Save a run first with save_run(path, result)."
        ) from None
    except UnicodeDecodeError:
        raise PersistenceError(f"{source}: not UTF-8 text; this is not a saved run.") from None
    except OSError as exc:
        raise PersistenceError(f"{source}: cannot be read ({exc.strerror or exc}).") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PersistenceError(
            f"{source}: corrupted, not valid JSON ({exc}). Restore it or save the run again."
        ) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise PersistenceError(
            f"{source}: not a saved pytest-agentctx run (schema "
            f"{data.get('schema') if isinstance(data, dict) else None!r}, expected {SCHEMA!r})."
        )
    if data.get("version") != SCHEMA_VERSION:
        raise PersistenceError(
            f"{source}: saved with schema version {data.get('version')!r}; this "
            f"pytest-agentctx reads version {SCHEMA_VERSION}. Load it with the version that "
            "saved it, or run the conversation again."
        )
    saved_agent = data.get("agent") or {}
    if not isinstance(saved_agent, dict):
        raise PersistenceError(
            f"{source}: 'agent' is {saved_agent!r}; expected {{'name': ..., 'model': ...}}. "
            "The file is corrupted."
        )
    if check_agent and (saved_agent.get("name"), saved_agent.get("model")) != (
        agent.name,
        agent.model,
    ):
        raise PersistenceError(
            f"{source}: saved for agent {saved_agent.get('name')!r} ({saved_agent.get('model')}), "
            f"but loaded for {agent.name!r} ({agent.model}). Pass the same agent, or "
            "load_run(..., check_agent=False) to continue with another one on purpose."
        )
    status = data.get("status")
    if status not in ("completed", "failed"):
        raise PersistenceError(
            f"{source}: status {status!r}; expected 'completed' or 'failed'. The file is corrupted."
        )
    for key in ("output", "error"):
        if not isinstance(data.get(key), str | None):
            raise PersistenceError(
                f"{source}: {key!r} is {data.get(key)!r}; expected text or null. The file is "
                "corrupted."
            )
    try:
        context = AgentContext.model_validate(data.get("context"))
    except ValidationError as exc:
        raise PersistenceError(
            f"{source}: the saved context is invalid ({exc.error_count()} error(s), first: "
            f"{exc.errors(include_url=False)[0]['msg']}). The file is corrupted."
        ) from None
    return RunResult(
        agent=agent,
        context=context,
        output=data.get("output"),
        status=status,
        error=data.get("error"),
    )
