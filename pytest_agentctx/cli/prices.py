"""``pytest-agentctx prices pin [--day YYYY-MM-DD]``: the ``agent_price_data`` line that
pins the installed genai-prices' data at a day's prices (today, unless ``--day``), and
what the project pins now.

Pinning is the one visible step that changes a project's dollars: a replay prices its
calls with the pinned release at the pinned day's prices, whatever day it runs on. The
command prints the line; the project's ini file is the user's to change.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, date, datetime

from pytest_agentctx.exceptions import AgentCtxError, UsageError

Print = Callable[[str], None]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``prices`` command and its ``pin`` action."""
    prices = commands.add_parser("prices", help="the price data: pin genai-prices' data")
    actions = prices.add_subparsers(dest="action", required=True, metavar="ACTION")
    pin = actions.add_parser(
        "pin", help="print the agent_price_data line that pins the installed price data"
    )
    pin.add_argument(
        "--day",
        metavar="YYYY-MM-DD",
        help="the day whose prices apply (default: today, UTC)",
    )


def run_prices(args: argparse.Namespace, pinned: str | None, out: Print) -> int:
    """Print the ``agent_price_data`` line for ``args.day`` (and the project's ``pinned``
    line, if any); the exit code."""
    from pytest_agentctx.reports.pricing import PriceData

    day = datetime.now(UTC).date()
    if args.day is not None:
        try:
            day = date.fromisoformat(args.day)
        except ValueError:
            raise UsageError(
                f"--day {args.day!r} is not a date; expected YYYY-MM-DD, e.g. --day 2026-11-29."
            ) from None
    data = PriceData.installed(day)
    line = f"agent_price_data = {data.pin_line()}"
    if pinned:
        try:
            same = PriceData.parse(pinned).pin_line() == data.pin_line()
        except AgentCtxError as exc:
            out(f"The project pins: agent_price_data = {pinned} ({exc})")
        else:
            if same:
                out(f"The project already pins this data: agent_price_data = {pinned}")
                return 0
            out(f"The project pins: agent_price_data = {pinned}")
    out(f"To price with genai-prices {data.version} at the prices of {day.isoformat()}, put")
    out(f"    {line}")
    out(
        "in the [pytest] section of the project's ini file (pytest.ini, tox.ini, setup.cfg's "
        "[tool:pytest], or pyproject.toml's [tool.pytest.ini_options] as agent_price_data = \""
        f"{data.pin_line()}\"), and commit it: the reports' dollars change with it, and only "
        "with it."
    )
    return 0
