"""A test's prompt-cache failure, and the markers and ini switch that ask for the checks.

:func:`cache_failure` words the failure of a test from its model calls
(:mod:`.cacheprefix`): the calls that break their conversation's prefix, and the calls that
lack a cache breakpoint the test's ``agent_cache`` marker declares. :func:`exemption`,
:func:`declared_breakpoints` and :func:`prefix_setting` read the ``agent_cache_exempt`` and
``agent_cache`` markers and the ``agent_cache_prefix`` ini option.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_agentctx.traffic.capture.cacheprefix import (
    PARTS,
    CallBlocks,
    marked_calls,
    missing_breakpoints,
    prefix_breaks,
)
from pytest_agentctx.traffic.errors import CacheMarkerError

# -- the test's failure ---------------------------------------------------------------

#: How many prefix breaks a failure shows (the count says how many more there are).
_SHOWN_BREAKS = 5


def cache_failure(
    calls: Sequence[CallBlocks], where: str, *, check: bool, parts: Sequence[str]
) -> str | None:
    """The failure of test ``where`` (its node id) over its model ``calls``: the prefix
    breaks when ``check``, the calls without a breakpoint on one of ``parts``; ``None``
    when there is nothing to say."""
    lines = _break_lines(calls, where) if check else []
    if parts:
        lines += _breakpoint_lines(calls, where, parts)
    return "\n".join(lines) if lines else None


def _break_lines(calls: Sequence[CallBlocks], where: str) -> list[str]:
    breaks = prefix_breaks(calls)
    if not breaks:
        return []
    lines = [
        f"{where}: {len(breaks)} model call(s) break the prompt-cache prefix of their "
        "conversation: a call must send the previous call's tools, system prompt and "
        "messages unchanged and in the same order (the messages may only grow at the end), "
        "or the provider's prompt cache misses."
    ]
    lines += ["  " + b.message().replace("\n", "\n  ") for b in breaks[:_SHOWN_BREAKS]]
    if len(breaks) > _SHOWN_BREAKS:
        lines.append(f"  ... and {len(breaks) - _SHOWN_BREAKS} more")
    lines.append(
        "Keep the earlier blocks as they were sent, or, when the change is deliberate (a "
        "compacted history), mark the test "
        '@pytest.mark.agent_cache_exempt(reason="..."); agent_cache_prefix = off in the '
        "ini file turns the check off (docs/caches.md)."
    )
    return lines


def _breakpoint_lines(calls: Sequence[CallBlocks], where: str, parts: Sequence[str]) -> list[str]:
    declared = f"@pytest.mark.agent_cache(breakpoints={list(parts)!r})"
    marked = marked_calls(calls)
    if not marked:
        return [
            f"{where}: {declared} declares cache breakpoints, but the test made no "
            f"Anthropic Messages or Bedrock call ({len(calls)} model call(s) of other "
            "formats), so nothing was checked. Remove the marker, or check that the agent "
            "ran inside the test."
        ]
    absent = [p for p in parts if not any(_part(call, p) for call in marked)]
    if absent:
        return [
            f"{where}: {declared} declares a cache breakpoint on {', '.join(absent)}, but no "
            f"Anthropic Messages or Bedrock call of the test ({len(marked)}) sent "
            f"{'that part' if len(absent) == 1 else 'those parts'}, so nothing was checked. "
            "Remove it from the marker, or check that the agent sends it."
        ]
    missing = missing_breakpoints(marked, parts)
    if not missing:
        return []
    return (
        [f"{where}: {declared}, but {len(missing)} of {len(marked)} call(s) lack one:"]
        + [f"  {line}" for line in missing[:_SHOWN_BREAKS]]
        + (
            [f"  ... and {len(missing) - _SHOWN_BREAKS} more"]
            if len(missing) > _SHOWN_BREAKS
            else []
        )
        + [
            "Put a cache_control marker (Anthropic) or a cachePoint block (Bedrock) on the "
            "last block of each declared part, or change the marker (docs/caches.md)."
        ]
    )


def _part(call: CallBlocks, part: str) -> bool:
    return bool({"tools": call.tools, "system": call.system, "messages": call.messages}[part])


# -- the markers and the ini switch ----------------------------------------------------

Marks = Sequence[tuple[tuple[object, ...], Mapping[str, object]]]


def prefix_setting(value: str) -> bool:
    """Whether the ini value of ``agent_cache_prefix`` turns the check on (``check``, the
    default when empty) or off (``off``)."""
    cleaned = value.strip().lower()
    if cleaned in ("", "check"):
        return True
    if cleaned == "off":
        return False
    raise CacheMarkerError(
        f"ini option agent_cache_prefix = {value!r}; it takes check (the default: a test "
        "fails when a call does not start with its conversation's previous call) or off. "
        "Fix the ini file and run pytest again."
    )


def exemption(marks: Marks, where: str) -> str | None:
    """The reason of the test's ``agent_cache_exempt`` marker (the closest one), ``None``
    without one; a marker without a reason (or with an empty one) is an error."""
    if not marks:
        return None
    args, kwargs = marks[0]
    unknown = sorted(set(kwargs) - {"reason"})
    reason = kwargs.get("reason", args[0] if len(args) == 1 else None)
    if unknown or len(args) > 1 or (args and "reason" in kwargs):
        reason = None
    if not isinstance(reason, str) or not reason.strip():
        raise CacheMarkerError(
            f"{where}: {_usage('agent_cache_exempt', args, kwargs)} gives no reason; the "
            "exemption from the prompt-cache prefix check needs one, e.g. "
            '@pytest.mark.agent_cache_exempt(reason="the agent compacts its history"). '
            "Add it and run the test again."
        )
    return reason.strip()


def declared_breakpoints(marks: Marks, where: str) -> tuple[str, ...]:
    """The parts the test's ``agent_cache`` markers declare a cache breakpoint on (each
    marker's ``breakpoints``, in order, without repeats)."""
    parts: list[str] = []
    for args, kwargs in marks:
        given = kwargs.get("breakpoints")
        if isinstance(given, str):
            given = [given]
        if (
            args
            or set(kwargs) != {"breakpoints"}
            or not isinstance(given, list | tuple)
            or not given
            or any(part not in PARTS for part in given)
        ):
            raise CacheMarkerError(
                f"{where}: {_usage('agent_cache', args, kwargs)} cannot work; it takes "
                f"breakpoints=, a list of parts among {', '.join(PARTS)}, e.g. "
                '@pytest.mark.agent_cache(breakpoints=["tools", "system"]). Fix the marker '
                "and run the test again."
            )
        parts += [str(part) for part in given if part not in parts]
    return tuple(parts)


def _usage(name: str, args: tuple[object, ...], kwargs: Mapping[str, object]) -> str:
    shown = [repr(arg) for arg in args] + [f"{key}={value!r}" for key, value in kwargs.items()]
    return f"@pytest.mark.{name}({', '.join(shown)})"
