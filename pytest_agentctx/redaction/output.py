"""What the plugin prints and pytest reports, scrubbed of secrets by a test's redactor:
printed lines (:func:`redact_lines`, with the note :func:`redacted_note` when a secret was
replaced) and a pytest report's failure text and captured output (:func:`redact_report`).

The redactor itself is the caller's: the test's, from :mod:`.active`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from pytest_agentctx.redaction.redactor import Redactor


def redacted_note() -> str:
    """The line added to an explanation in which a secret was replaced."""
    from pytest_agentctx.redaction.redactor import REDACTED

    return (
        f"(secrets are shown as {REDACTED}: two values that differ only inside a secret "
        "look the same here)"
    )


def shows_secret(text: str, redactor: Redactor) -> bool:
    """Whether ``text`` holds a secret the redactor replaces (in any form it knows)."""
    return redactor.text(text) != text


def redact_lines(lines: list[str], redactor: Redactor) -> list[str]:
    """Printed lines scrubbed of secrets; when one changed, a last line says that secrets
    are shown as ``REDACTED`` (two values that differ only in a secret then look alike)."""
    scrubbed = [redactor.text(line) for line in lines]
    if scrubbed != lines:
        scrubbed.append(redacted_note())
    return scrubbed


def redact_report(report: pytest.TestReport, redactor: Redactor) -> None:
    """Scrub a test report in place: its failure text (``longrepr``: the traceback, the
    assertion explanation, the exception's message, the crash line) and its captured
    output sections. Outcomes and locations are left alone."""
    if not redactor.secret_values:
        return
    if report.sections:
        report.sections = [(title, redactor.text(content)) for title, content in report.sections]
    longrepr = report.longrepr
    if longrepr is None:
        return
    if isinstance(longrepr, str | tuple):
        report.longrepr = _scrub_repr(longrepr, redactor)
        return
    _scrub_repr(longrepr, redactor)
    # A failure representation this walk does not know (another plugin's) keeps its text:
    # replace it by its scrubbed text.
    rendered = str(longrepr)
    if shows_secret(rendered, redactor):
        report.longrepr = redactor.text(rendered)


def _scrub_repr(value: Any, redactor: Redactor) -> Any:
    """``value`` (a piece of pytest's failure representation) scrubbed: strings replaced,
    lists and tuples rebuilt, dataclasses (pytest's ``Repr*`` classes) changed in place."""
    if isinstance(value, str):
        return redactor.text(value)
    if isinstance(value, list):
        return [_scrub_repr(item, redactor) for item in value]
    if isinstance(value, tuple):
        return tuple(_scrub_repr(item, redactor) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            current = getattr(value, item.name, None)
            scrubbed = _scrub_repr(current, redactor)
            if scrubbed is not current:
                object.__setattr__(value, item.name, scrubbed)
        return value
    longrepr = getattr(value, "longrepr", None)  # pytest's CollectErrorRepr
    if isinstance(longrepr, str):
        value.longrepr = redactor.text(longrepr)
    return value
