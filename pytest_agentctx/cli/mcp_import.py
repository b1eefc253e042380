"""``pytest-agentctx mcp import FILE --out CASSETTE [--server NAME]``: a session another MCP
recorder wrote (mcp-recorder, mcp-cassette, mcp-vcr) converted into a cassette of the
package (:mod:`pytest_agentctx.traffic.mcp.foreign`).

The cassette is written in the package's format (JSON, or YAML for a ``.yaml`` name), its
interactions scrubbed by the package's redactor as every file it writes is; an existing
``--out`` is never overwritten. It prints the format read, the server, how many
interactions, their MCP methods, and what the foreign file could not hold.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_agentctx.exceptions import UsageError

Print = Callable[[str], None]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``mcp`` command and its ``import`` action."""
    mcp = commands.add_parser("mcp", help="MCP sessions: import another recorder's cassette")
    actions = mcp.add_subparsers(dest="action", required=True, metavar="ACTION")
    imported = actions.add_parser(
        "import",
        help="convert a cassette of mcp-recorder, mcp-cassette or mcp-vcr into the package's",
    )
    imported.add_argument("path", metavar="FILE", help="the other recorder's cassette")
    imported.add_argument(
        "--out", metavar="CASSETTE", required=True, help="the cassette to write (.json, .yaml)"
    )
    imported.add_argument(
        "--server",
        metavar="NAME",
        help="the stdio server's label (the stem of its *.py, the module after -m, or its "
        "command's name), or the HTTP server's URL; default: what the file says",
    )


def run_mcp_import(args: argparse.Namespace, secret_env: Sequence[str], out: Print) -> int:
    """Convert ``args.path`` into the cassette ``args.out``; the exit code."""
    from pytest_agentctx._untrusted import LimitExceeded, read_untrusted
    from pytest_agentctx.redaction.redactor import DEFAULT_SECRET_ENV
    from pytest_agentctx.traffic.cassettes.redact import Redactor
    from pytest_agentctx.traffic.cassettes.store import write_cassette
    from pytest_agentctx.traffic.mcp.foreign import import_foreign
    from pytest_agentctx.traffic.mcp.jsonrpc import describe
    from pytest_agentctx.traffic.mcp.wire import mcp_exchanges

    source, target = Path(args.path), Path(args.out)
    if target.exists():
        raise UsageError(
            f"--out {target} exists; the import writes a new cassette and never overwrites "
            "one. Remove it, or give another --out."
        )
    try:
        text = read_untrusted(source).decode("utf-8")
    except (LimitExceeded, UnicodeDecodeError) as exc:
        raise UsageError(f"{source}: {exc}. Give a cassette file of an MCP recorder.") from None
    imported = import_foreign(text, str(source), server=args.server)
    redactor = Redactor(env=(*DEFAULT_SECRET_ENV, *secret_env))
    scrubbed = [
        dataclasses.replace(
            one,
            url=redactor.url(one.url),
            request_headers=dict(redactor.header_items(one.request_headers.items())),
            request_body=redactor.body(one.request_body),
            response_headers=dict(redactor.response_header_items(one.response_headers.items())),
            response_body=redactor.body(one.response_body),
        )
        for one in imported.interactions
    ]
    write_cassette(target, scrubbed)
    out(
        f"pytest-agentctx: imported {source} ({imported.format}, {imported.transport} "
        f"server {imported.server}): {len(scrubbed)} interaction(s) written to {target}"
    )
    for exchange in mcp_exchanges(scrubbed):
        shown = ", ".join(describe(message) for message in exchange.sent) or exchange.method
        out(f"  {exchange.position}: {shown}")
    for note in imported.notes:
        out(f"  note: {note}")
    if imported.transport == "stdio" and not args.server:
        out(
            f"  the stdio server is labelled {imported.server!r}: if the test's command gets "
            "another label, import again with --server LABEL"
        )
    return 0
