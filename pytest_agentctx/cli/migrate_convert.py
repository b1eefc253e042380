"""``pytest-agentctx migrate --convert-json``: the project's vcrpy cassettes rewritten as the
same documents in JSON, which vcrpy, pytest-recording and PyYAML read as they read the
YAML, and which the plugin reads many times faster the first time (docs/migrating.md).

Each YAML file of the project (:func:`~.migrate_scan.project_files`) that holds a vcrpy
cassette is rewritten in place, under its name, by
:func:`~pytest_agentctx.traffic.cassettes.vcr.vcr_json` (a gzip body that is text written
decoded, as vcrpy hands it to the client); one JSON cannot say as YAML reads it back (bytes
that are no text, a date...) stays YAML and is listed with the reason. Files
written in JSON already are counted, not rewritten: a second run changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

Print = Callable[[str], None]


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def convert_cassettes(
    root: Path, *, dry_run: bool, out: Print, secret_env: Sequence[str] = ()
) -> int:
    """Convert the vcrpy cassettes under ``root`` (``dry_run``: say which, write nothing),
    printing each file converted and each left as YAML with why; how many were (or
    would be) converted. What is written passes the package's redactor (the secret
    headers, key-like query parameters and the values of the default secret variables and
    of ``secret_env``, the project's ``agent_secret_env``), as every file the plugin
    writes does."""
    import yaml

    from pytest_agentctx._files import atomic_write_bytes
    from pytest_agentctx._untrusted import LimitExceeded
    from pytest_agentctx.cli.migrate_scan import project_files
    from pytest_agentctx.redaction.redactor import DEFAULT_SECRET_ENV, Redactor
    from pytest_agentctx.traffic.cassettes.vcr import ALREADY_JSON, vcr_json

    redactor = Redactor(env=(*DEFAULT_SECRET_ENV, *secret_env))

    converted: list[str] = []
    kept: list[tuple[str, str]] = []
    already = 0
    for path in project_files(root, (".yaml", ".yml")):
        try:
            text, why = vcr_json(path, redactor)
        except (OSError, ValueError, yaml.YAMLError, LimitExceeded, RecursionError) as exc:
            kept.append((_shown(path, root), f"it cannot be read as YAML ({exc})"))
            continue
        if text is not None:
            if not dry_run:
                atomic_write_bytes(path, text.encode("utf-8"))
            converted.append(_shown(path, root))
        elif why == ALREADY_JSON:
            already += 1
        elif why:
            kept.append((_shown(path, root), why))
    verb = "would convert" if dry_run else "converted"
    out(
        f"--convert-json: {verb} {len(converted)} vcrpy cassette(s) to JSON (the same "
        "document: vcrpy and pytest-recording read it as before; the plugin reads it "
        f"faster); {already} already in JSON; {len(kept)} stay YAML"
    )
    for name in converted:
        out(f"  {verb}: {name}")
    for name, why in kept:
        out(f"  stays YAML: {name}: {why}")
    return len(converted)
