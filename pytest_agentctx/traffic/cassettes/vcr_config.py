"""A project's vcrpy configuration read as this package's options: what its ``vcr_config``
fixture returns, with its ``vcr`` markers' keyword arguments merged over it as
pytest-recording merges them (:func:`merge_vcr_kwargs`), translated by
:func:`translate_vcr_config` into :class:`VcrOptions` (the test's record mode, allowed
hosts, cassette folder, request filters, and ``agent_cassette_config`` keys).

What the package cannot honour is refused, never ignored: a :class:`CassetteConfigError`
names the key, the value and what to do instead. :data:`VCR_KEYS` says what each key
becomes.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from pytest_agentctx.traffic.cassettes.defaults import RecordMode
from pytest_agentctx.traffic.errors import CassetteConfigError

#: vcrpy's record modes (and pytest-recording's ``rewrite``) and this package's.
VCR_RECORD_MODES = {
    "none": RecordMode.NONE,
    "once": RecordMode.MISSING,
    "new_episodes": RecordMode.NEW,
    "all": RecordMode.REWRITE,
    "rewrite": RecordMode.REWRITE,
}
#: vcrpy's built-in matchers, passed on by name.
BUILTIN_MATCHERS = frozenset(
    {"method", "uri", "url", "scheme", "host", "port", "path", "query", "headers"}
    | {"raw_body", "body"}
)
#: vcrpy's ``match_on`` when only ``additional_matchers`` is given.
BUILTIN_MATCHERS_DEFAULT = ("method", "scheme", "host", "port", "path", "query")
#: The hosts ``ignore_localhost`` stands for (as vcrpy lists them).
LOCALHOST = ("localhost", "127.0.0.1", "0.0.0.0", "::1")

#: Every key of ``vcr_config`` (and of a ``vcr`` marker) and what becomes of it.
VCR_KEYS = {
    "record_mode": "the test's record mode",
    "match_on": "agent_cassette_config match_on",
    "additional_matchers": "agent_cassette_config match_on (appended)",
    "ignore_hosts": "agent_cassette_config ignore_hosts",
    "ignore_localhost": "agent_cassette_config ignore_hosts (the loopback names)",
    "cassette_library_dir": "the cassette's folder",
    "filter_headers": "request headers redacted",
    "filter_query_parameters": "query parameters removed or replaced",
    "filter_post_data_parameters": "body parameters removed or replaced",
    "filter_nested_post_data_parameters": "False only",
    "filter_sensitive_data": "agent_cassette_config redact_values",
    "decode_compressed_response": "accepted: bodies are always stored decoded",
    "serializer": "'yaml' only",
    "allowed_hosts": "the test's allowed hosts (plain host regexes only)",
    "before_record_request": "accepted when it returns the request unchanged",
    "before_record": "accepted when it returns the request unchanged",
    "before_record_response": "accepted when it returns the response unchanged",
    "record_on_exception": "accepted: a failing test's recording is kept only with "
    "--agent-record-failing",
    "allow_playback_repeats": "False only",
    "drop_unused_requests": "False only",
    "inject_cassette": "False only",
}
#: What to do instead of the keys the package cannot honour.
_INSTEAD = {
    "path_transformer": "name the file with @pytest.mark.agent(cassette='path/to/file.yaml')",
    "func_path_generator": "name the file with @pytest.mark.agent(cassette='path/to/file.yaml')",
    "custom_patches": "the package records httpx, requests/urllib3 and aiohttp itself: remove "
    "the key",
    "persister": "the package reads and writes the cassette files itself: remove the key",
    "before_save_interaction": "scrub values with agent_cassette_config redact_values",
    "after_load_interaction": "normalise bodies for matching with agent_cassette_config body_hook",
    "skip_patchers": "remove the key",
}


class RequestFilters(NamedTuple):
    """vcrpy's request filters: ``(name, replacement)`` pairs, ``None`` to remove. Header
    values are always redacted (whatever the replacement); query and body parameters are
    removed or replaced as vcrpy does, so a recording vcrpy filtered still matches."""

    headers: tuple[tuple[str, str | None], ...] = ()
    query: tuple[tuple[str, str | None], ...] = ()
    post: tuple[tuple[str, str | None], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.headers or self.query or self.post)


class VcrOptions(NamedTuple):
    """What a test's ``vcr_config`` (and ``vcr`` markers) ask, in this package's terms."""

    #: ``agent_cassette_config`` keys: ``match_on``, ``ignore_hosts``, ``redact_values``.
    config: Mapping[str, object] = {}
    record_mode: RecordMode | None = None
    allowed_hosts: tuple[str, ...] = ()
    #: ``cassette_library_dir``: the folder of the test's cassette, instead of the tool's.
    library_dir: Path | None = None
    filters: RequestFilters = RequestFilters()
    #: ``before_record_*`` hooks, ``(key, function)``, accepted if they change nothing.
    hooks: tuple[tuple[str, Callable[..., object]], ...] = ()


def merge_vcr_kwargs(
    config: Mapping[str, object], markers: Iterable[Mapping[str, object]]
) -> dict[str, object]:
    """``config`` with the keyword arguments of the ``vcr`` markers (closest first, as
    ``item.iter_markers`` gives them) laid over it, the closest's winning (pytest-recording's
    ``merge_kwargs``)."""
    merged = dict(config)
    for kwargs in reversed(list(markers)):
        merged.update(kwargs)
    return merged


def vcr_record_mode(value: object, *, where: str) -> RecordMode:
    """This package's mode for a vcrpy record mode (a name or vcrpy's ``RecordMode``)."""
    name = str(getattr(value, "value", value)).strip().lower()
    if name not in VCR_RECORD_MODES:
        raise CassetteConfigError(
            f"{where}: record_mode {value!r} is not one of vcrpy's modes "
            f"({', '.join(VCR_RECORD_MODES)}); e.g. record_mode='once'. Fix the value."
        )
    return VCR_RECORD_MODES[name]


def regex_host(pattern: str) -> str | None:
    """The host (or ``*.domain`` wildcard) that a pytest-recording ``allowed_hosts`` regex
    stands for, when it is a plain one (``localhost``, ``127\\.0\\.0\\.1``,
    ``^api\\.example\\.com$``, ``.*\\.example\\.com``); ``None`` for any other regex."""
    text = pattern.strip().removeprefix("^").removesuffix("$")
    wildcard = ""
    for prefix in (r".*\.", r"(.*\.)?", r".+\."):
        if text.startswith(prefix):
            wildcard, text = "*.", text[len(prefix) :]
            break
    host = re.sub(r"\\([.\-])", r"\1", text)
    if not host or re.search(r"[\\^$*+?()\[\]{}|/\s]", host) or host.count(":") == 1:
        return None
    return f"{wildcard}{host}"


def translate_vcr_config(
    vcr_config: Mapping[str, object],
    *,
    matchers: Mapping[str, Callable[..., object]],
    where: str,
) -> VcrOptions:
    """``vcr_config`` (merged with the test's ``vcr`` markers' keyword arguments) as
    :class:`VcrOptions`; ``matchers`` are those registered with ``vcr.register_matcher``.

    Raises :class:`CassetteConfigError` naming the test ``where``, the key, the value and
    what to do instead, for a key the package cannot honour or a value it cannot read.
    """
    if not isinstance(vcr_config, Mapping):
        raise CassetteConfigError(
            f"{where}: vcr_config returned {type(vcr_config).__name__} {vcr_config!r}; "
            "expected a dict of vcrpy options. Fix the fixture's return."
        )
    _refuse_unknown(vcr_config, where)
    config: dict[str, object] = {}
    given = {key: value for key, value in vcr_config.items() if value is not None}
    match_on = _matchers(given, matchers, where)
    if match_on is not None:
        config["match_on"] = match_on
    hosts = [*_strings(given, "ignore_hosts", where)]
    if given.get("ignore_localhost"):
        hosts.extend(host for host in LOCALHOST if host not in hosts)
    if hosts:
        config["ignore_hosts"] = tuple(hosts)
    secrets = _sensitive_values(given.get("filter_sensitive_data", ()), where)
    if secrets:
        config["redact_values"] = secrets
    _check_fixed(given, where)
    mode = given.get("record_mode")
    library = given.get("cassette_library_dir")
    return VcrOptions(
        config=config,
        record_mode=None if mode is None else vcr_record_mode(mode, where=where),
        allowed_hosts=_allowed_hosts(given.get("allowed_hosts"), where),
        library_dir=None if library is None else Path(str(library)),
        filters=RequestFilters(
            headers=_filters(given, "filter_headers", where),
            query=_filters(given, "filter_query_parameters", where),
            post=_filters(given, "filter_post_data_parameters", where),
        ),
        hooks=_hooks(given, where),
    )


def _refuse_unknown(vcr_config: Mapping[str, object], where: str) -> None:
    for key in vcr_config:
        if key in _INSTEAD:
            raise CassetteConfigError(
                f"{where}: vcr_config {key}={vcr_config[key]!r} cannot be honoured by "
                f"pytest-agentctx; instead, {_INSTEAD[key]}. Remove {key!r} from vcr_config "
                "(or the vcr marker)."
            )
        if key not in VCR_KEYS:
            close = difflib.get_close_matches(str(key), VCR_KEYS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise CassetteConfigError(
                f"{where}: vcr_config has the unknown key {key!r}{hint}; the keys read are "
                f"{', '.join(VCR_KEYS)}. Fix or remove it in vcr_config (or the vcr marker)."
            )


def _error(where: str, key: str, value: object, expected: str) -> CassetteConfigError:
    return CassetteConfigError(
        f"{where}: vcr_config {key}={value!r}; expected {expected}. Fix vcr_config (or the "
        "vcr marker)."
    )


def _strings(given: Mapping[str, object], key: str, where: str) -> tuple[str, ...]:
    value = given.get(key, ())
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise _error(where, key, value, "a list or tuple of strings")
    items = tuple(value)
    if not all(isinstance(item, str) and item.strip() for item in items):
        raise _error(where, key, value, "a list or tuple of non-empty strings")
    return items


def _matchers(
    given: Mapping[str, object], matchers: Mapping[str, Callable[..., object]], where: str
) -> tuple[object, ...] | None:
    if "match_on" not in given and "additional_matchers" not in given:
        return None
    names: list[object] = []
    for key, default in (("match_on", BUILTIN_MATCHERS_DEFAULT), ("additional_matchers", ())):
        value = given.get(key, default)
        if isinstance(value, str) or not isinstance(value, Iterable):
            raise _error(where, key, value, "a list or tuple of matcher names")
        names.extend(value)
    resolved: list[object] = []
    for name in names:
        if callable(name):
            resolved.append(name)
        elif isinstance(name, str) and name in matchers:
            resolved.append(matchers[name])
        elif isinstance(name, str) and name in BUILTIN_MATCHERS:
            resolved.append(name)
        else:
            known = ", ".join(sorted(BUILTIN_MATCHERS))
            raise CassetteConfigError(
                f"{where}: vcr_config match_on names the matcher {name!r}, which is neither "
                f"vcrpy's ({known}) nor registered; register it in conftest.py: "
                "def pytest_recording_configure(config, vcr): "
                f"vcr.register_matcher({name!r}, function)."
            )
    return tuple(resolved)


def _filters(
    given: Mapping[str, object], key: str, where: str
) -> tuple[tuple[str, str | None], ...]:
    value = given.get(key, ())
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise _error(where, key, value, "a list of names or (name, replacement) pairs")
    pairs: list[tuple[str, str | None]] = []
    for item in value:
        name, replacement = (item, None) if isinstance(item, str) else _pair(item)
        if (
            not isinstance(name, str)
            or not name
            or not (replacement is None or isinstance(replacement, str))
        ):
            raise _error(
                where,
                key,
                value,
                "a list of names or (name, replacement) pairs, the replacement a string or "
                "None (a function as replacement is not run: use a string)",
            )
        pairs.append((name, replacement))
    return tuple(pairs)


def _pair(item: object) -> tuple[object, object]:
    if isinstance(item, Sequence) and len(item) == 2:
        return item[0], item[1]
    return None, None


def _sensitive_values(value: object, where: str) -> tuple[str, ...]:
    """``filter_sensitive_data``'s ``(placeholder, value)`` pairs: the values, redacted."""
    from pytest_agentctx.redaction.redactor import MIN_SECRET

    if not isinstance(value, Iterable) or isinstance(value, str):
        raise _error(where, "filter_sensitive_data", "<not shown>", "(placeholder, value) pairs")
    values = []
    for item in value:
        _, secret = _pair(item)
        if not isinstance(secret, str) or len(secret) < MIN_SECRET:
            raise CassetteConfigError(
                f"{where}: vcr_config filter_sensitive_data holds a value (not shown) that is "
                f"not a string of {MIN_SECRET} characters or more; shorter values are never "
                "redacted, as they would redact ordinary words. Fix vcr_config."
            )
        values.append(secret)
    return tuple(values)


def _check_fixed(given: Mapping[str, object], where: str) -> None:
    """The keys the package honours with one value only."""
    for key in ("allow_playback_repeats", "drop_unused_requests", "inject_cassette"):
        if key in given and given[key] is not False:
            instead = {
                "allow_playback_repeats": "record the request as often as it is made "
                "(pytest --agent-record)",
                "drop_unused_requests": "re-record the test (pytest --agent-record) to drop "
                "what it no longer uses",
                "inject_cassette": "ask for the agent_cassette fixture",
            }[key]
            raise _error(where, key, given[key], f"False (the package cannot honour it: {instead})")
    if given.get("filter_nested_post_data_parameters"):
        raise _error(
            where,
            "filter_nested_post_data_parameters",
            given["filter_nested_post_data_parameters"],
            "False (nested body values: list them in agent_cassette_config redact_values)",
        )
    serializer = given.get("serializer", "yaml")
    if serializer != "yaml":
        raise _error(where, "serializer", serializer, "'yaml' (vcrpy's YAML cassettes)")
    for key in ("decode_compressed_response", "record_on_exception"):
        if key in given and not isinstance(given[key], bool):
            raise _error(where, key, given[key], "True or False")


def _allowed_hosts(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    patterns = value.split(",") if isinstance(value, str) else value
    if not isinstance(patterns, Iterable):
        raise _error(where, "allowed_hosts", value, "a list of host regexes")
    hosts = []
    for pattern in patterns:
        host = regex_host(pattern) if isinstance(pattern, str) else None
        if host is None:
            raise CassetteConfigError(
                f"{where}: vcr_config allowed_hosts holds {pattern!r}, a regex that names no "
                "single host or domain; pytest-agentctx allows host names, *.wildcards and "
                "addresses: give them in agent_cassette_config allowed_hosts (e.g. "
                "['api.example.com', '*.internal.example']) and remove the regex."
            )
        hosts.append(host)
    return tuple(hosts)


def _hooks(
    given: Mapping[str, object], where: str
) -> tuple[tuple[str, Callable[..., object]], ...]:
    """The ``before_record_*`` hooks (one function or a list of them, as vcrpy takes)."""
    hooks: list[tuple[str, Callable[..., object]]] = []
    for key in ("before_record_request", "before_record", "before_record_response"):
        value = given.get(key)
        functions = value if isinstance(value, list | tuple) else () if value is None else (value,)
        hooks.extend((key, _callable(function, key, where)) for function in functions)
    return tuple(hooks)


def _callable(value: object, key: str, where: str) -> Callable[..., object]:
    if not callable(value):
        raise _error(where, key, value, "a function")
    return value


def check_hooks(hooks: Iterable[tuple[str, Callable[..., object]]], *, where: str) -> None:
    """Refuse a ``before_record_*`` hook that changes what it is given: the package cannot
    run it on every exchange. Each is called once with a probe (a vcrpy request, or
    response dict, with an ``Authorization`` header, a query and a body); one that returns
    the probe unchanged is a no-op here, one that returns something else (another request,
    ``None`` to drop it, a scrubbed copy) or raises is refused, naming what to use instead.
    """
    import copy

    for key, hook in hooks:
        probe = _probe_response() if key == "before_record_response" else _probe_request()
        before = copy.deepcopy(probe)
        try:
            result = hook(probe)
        except Exception as exc:
            changed = f"raised {type(exc).__name__} on a probe"
        else:
            changed = "" if result is probe and _same(probe, before) else "changes what it gets"
        if changed:
            what = "response" if key == "before_record_response" else "request"
            raise CassetteConfigError(
                f"{where}: vcr_config {key}={getattr(hook, '__name__', hook)!r} {changed}; "
                f"pytest-agentctx does not run vcrpy hooks on each {what}. Instead: redact "
                "values with agent_cassette_config redact_values (or vcr_config "
                "filter_headers / filter_query_parameters / filter_post_data_parameters), "
                "normalise bodies for matching with agent_cassette_config body_hook, leave "
                "hosts out with ignore_hosts; then remove the hook from vcr_config."
            )


def _probe_request() -> object:
    try:
        from vcr.request import Request
    except ImportError:  # vcrpy uninstalled: a stand-in with the attributes hooks read
        from types import SimpleNamespace

        uri = "https://api.example.com/v1/probe?q=1"
        return SimpleNamespace(
            method="POST",
            uri=uri,
            url=uri,
            scheme="https",
            host="api.example.com",
            port=443,
            path="/v1/probe",
            query=[("q", "1")],
            body=b'{"probe": 1}',
            headers={"Authorization": "Bearer probe", "Content-Type": "application/json"},
        )
    return Request(
        "POST",
        "https://api.example.com/v1/probe?q=1",
        b'{"probe": 1}',
        {"Authorization": "Bearer probe", "Content-Type": "application/json"},
    )


def _probe_response() -> dict[str, object]:
    return {
        "status": {"code": 200, "message": "OK"},
        "headers": {"Content-Type": ["application/json"], "Set-Cookie": ["probe=1"]},
        "body": {"string": b'{"probe": 1}'},
    }


def _same(after: object, before: object) -> bool:
    if isinstance(after, dict):
        return after == before
    fields = ("method", "uri", "body", "headers")
    return all(
        _plain(getattr(after, name, None)) == _plain(getattr(before, name, None)) for name in fields
    )


def _plain(value: object) -> object:
    return dict(value) if isinstance(value, Mapping) else value
