"""One self-contained HTML page from a JSON report: each agent run as a timeline.

:func:`render_html` turns the report that ``--agent-report`` writes (its schema is in the
reports documentation) into a single page with its CSS and JavaScript inline, no external
resource, usable offline. The page opens with the session's summary (tests, outcomes,
tokens, cost, the gate) and a table of every test; below it each test shows its runs, and
each run its iterations on a timeline (written by
:class:`~pytest_agentctx.reports.html_runs.RunTimeline`): the messages, the tool calls with
their arguments and results, the durations, the tokens and the model. Iterations are
collapsed and open on a click; sub-agent runs found in an iteration's metadata are shown
inside it. The conversations of a test's simulated users are shown before its runs
(:mod:`pytest_agentctx.reports.html_transcripts`). A failed test shows its failure text
(open, collapsible), and a test that drifted from the baseline shows the baseline's figures
beside its own (trajectory, iterations, tool calls, tokens, cost).

The page is a pure function of the report: the same report gives the same bytes (no
wall-clock time, no random ids), and every piece of text from the report is HTML-escaped
(:mod:`pytest_agentctx.reports.html_text`). It is built in one list of fragments joined
once, so a report of thousands of tests is rendered in linear time.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from importlib import resources

from pytest_agentctx.reports.html_repeats import repeat_html
from pytest_agentctx.reports.html_runs import RunTimeline
from pytest_agentctx.reports.html_text import (
    as_json,
    as_map,
    as_seq,
    badge,
    esc,
    fmt_cost,
    fmt_count,
    fmt_seconds,
)
from pytest_agentctx.reports.html_transcripts import transcripts_html
from pytest_agentctx.reports.pricing import dated_cassettes, price_data_words
from pytest_agentctx.reports.repeats import entry_met

#: The folder of the page's stylesheet and script, inlined into every page.
_ASSETS = "report_assets"


@functools.cache
def _asset(name: str) -> str:
    """The text of the file ``name`` of the package's report assets (read once).

    Read as text, so line ends are ``\\n`` however the file was checked out.
    """
    return (resources.files(__package__) / _ASSETS / name).read_text(encoding="utf-8")


#: The most flips the page lists (the JSON report has them all).
_FLIP_ROWS = 200


def _records(gate: Mapping[str, object]) -> list[Mapping[str, object]]:
    """The gate's records (``summary.gate.records``), each as a mapping."""
    return [as_map(record) for record in as_seq(gate.get("records"))]


class _Page:
    """The fragments of the page, written in order and joined once."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.w = self.out.append
        self.runs = RunTimeline(self.out)

    # -- the session ---------------------------------------------------------------------

    def document(self, report: Mapping[str, object]) -> str:
        summary = as_map(report.get("summary"))
        tests = [as_map(test) for test in as_seq(report.get("tests"))]
        gate_lines = self._gate_lines_by_test(summary, tests)
        w = self.w
        w('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n')
        w('<meta name="viewport" content="width=device-width, initial-scale=1">\n')
        w("<title>pytest-agentctx report</title>\n<style>\n")
        w(_asset("report.css"))
        w("</style>\n</head>\n<body>\n")
        self.summary(report, summary, tests)
        w("<main>\n")
        self.controls(len(tests))
        self.table(tests, gate_lines)
        w("<h2>Runs</h2>\n")
        for index, test in enumerate(tests):
            self.test(index, test, gate_lines.get(index, ()))
        w("</main>\n<script>\n")
        w(_asset("report.js"))
        w("</script>\n</body>\n</html>\n")
        return "".join(self.out)

    @staticmethod
    def _gate_lines_by_test(
        summary: Mapping[str, object], tests: Sequence[Mapping[str, object]]
    ) -> dict[int, list[str]]:
        """The messages of the gate's failing records of each test (by the record's node
        id; a report of version 1 has no records, and its failures are shown in the
        summary only)."""
        index = {str(test.get("nodeid", "")): i for i, test in enumerate(tests)}
        found: dict[int, list[str]] = {}
        for record in _records(as_map(summary.get("gate"))):
            position = index.get(str(record.get("nodeid")))
            if record.get("verdict") == "fail" and position is not None:
                found.setdefault(position, []).append(str(record.get("message", "")))
        return found

    def summary(
        self,
        report: Mapping[str, object],
        summary: Mapping[str, object],
        tests: Sequence[Mapping[str, object]],
    ) -> None:
        w = self.w
        stats = as_map(summary.get("stats"))
        w('<header class="top">\n<h1>pytest-agentctx report</h1>\n')
        if report.get("format") != "pytest-agentctx-report" or report.get("version") not in (1, 2):
            w(
                '<p class="facts bad">This page was made for report format '
                "<code>pytest-agentctx-report</code> version 2 (or 1); this report says "
                f"<code>{esc(report.get('format'))}</code> version "
                f"<code>{esc(report.get('version'))}</code>. Some parts may be missing.</p>\n"
            )
        cards = [
            ("tests", fmt_count(summary.get("tests", len(tests)))),
            ("passed", fmt_count(summary.get("passed"))),
            ("failed", fmt_count(summary.get("failed"))),
            ("skipped", fmt_count(summary.get("skipped"))),
            (
                "unit / integration",
                f"{fmt_count(summary.get('unit'))} / {fmt_count(summary.get('integration'))}",
            ),
            ("runs", fmt_count(stats.get("runs"))),
            ("iterations", fmt_count(stats.get("iterations"))),
            ("tool calls", fmt_count(stats.get("tool_calls"))),
            (
                "tokens in / out",
                f"{fmt_count(stats.get('input_tokens'))} / {fmt_count(stats.get('output_tokens'))}",
            ),
            ("cost", fmt_cost(stats.get("cost_usd"))),
            ("agent time", fmt_seconds(stats.get("duration_s")) or "0 ms"),
        ]
        w('<div class="cards">')
        for label, value in cards:
            w(f'<div class="card"><b>{esc(value)}</b><span>{esc(label)}</span></div>')
        w("</div>\n")
        models = [str(model) for model in as_seq(stats.get("models"))]
        if models:
            w(f'<div class="facts">models: {esc(", ".join(models))}</div>\n')
        read, written = stats.get("cache_read_tokens"), stats.get("cache_write_tokens")
        if read or written:
            w(
                f'<div class="facts">prompt cache: {fmt_count(read or 0)} input tokens read, '
                f"{fmt_count(written or 0)} written</div>\n"
            )
        priced = as_map(summary.get("price_data"))
        if priced:
            words = price_data_words(priced, dated_cassettes(tests))
            w(f'<div class="facts">cost priced with {esc(words)}</div>\n')
        self.gate(as_map(summary.get("gate")))
        w("</header>\n")

    def gate(self, gate: Mapping[str, object]) -> None:
        w = self.w
        if not gate.get("enabled"):
            w(
                '<div class="gate">Gate: not enabled (run pytest with <code>--agent-gate</code>'
                " to fail the session on budgets, stale cassettes and drift).</div>\n"
            )
            return
        records = _records(gate)
        failures = (
            [str(r.get("message", "")) for r in records if r.get("verdict") == "fail"]
            if "records" in gate
            else [str(line) for line in as_seq(gate.get("failures"))]  # version 1
        )
        if gate.get("passed") and not failures:
            w('<div class="gate pass" id="gate">Gate: <b>passed</b>')
        else:
            w(
                f'<div class="gate fail" id="gate">Gate: <b>failed</b> ({len(failures):,} '
                f"{'failure' if len(failures) == 1 else 'failures'})<ul>"
            )
            for line in failures:
                w(f'<li class="mono">{esc(line)}</li>')
            w("</ul>")
        self.paired(records)
        w("</div>\n")

    def paired(self, records: Sequence[Mapping[str, object]]) -> None:
        """The comparison with the baseline pair by pair, from the gate's records: the
        pass rate, the margin and the differences, then the table of flips."""
        w = self.w
        compared = [r for r in records if r.get("kind") in ("pass_rate", "margin", "difference")]
        if compared:
            w('<div class="facts">paired with the baseline:<ul>')
            for record in compared:
                w(f'<li class="mono">{esc(record.get("message", ""))}</li>')
            w("</ul></div>")
        flipped = [r for r in records if r.get("kind") == "flip"]
        if not flipped:
            return
        w(
            f'<table class="tests flips"><caption>flips ({len(flipped):,})</caption><thead><tr>'
            "<th>test</th><th>measure</th><th>baseline</th><th>now</th></tr></thead><tbody>"
        )
        for record in flipped[:_FLIP_ROWS]:
            w(
                f"<tr><td>{esc(record.get('nodeid', ''))}</td><td>{esc(record.get('measure'))}"
                f"</td><td>{badge(record.get('baseline', ''))}</td>"
                f"<td>{badge(record.get('now', ''))}</td></tr>"
            )
        w("</tbody></table>")
        if len(flipped) > _FLIP_ROWS:
            w(f'<div class="facts">... and {len(flipped) - _FLIP_ROWS:,} more flips</div>')

    def controls(self, total: int) -> None:
        self.w(
            '<div class="controls">'
            '<input type="search" id="filter" placeholder="Filter tests by node id" '
            'aria-label="Filter tests by node id">'
            '<select id="outcome" aria-label="Show tests">'
            '<option value="">all tests</option>'
            '<option value="failed">failed</option>'
            '<option value="passed">passed</option>'
            '<option value="skipped">skipped</option>'
            '<option value="attention">needing attention</option>'
            "</select>"
            '<button type="button" id="expand-tests">Open all tests</button>'
            '<button type="button" id="collapse-all">Collapse all</button>'
            f'<span class="muted"><span id="shown">{total:,}</span> of {total:,} tests shown'
            "</span></div>\n"
        )

    # -- the table of tests --------------------------------------------------------------

    def table(
        self, tests: Sequence[Mapping[str, object]], gate_lines: Mapping[int, Sequence[str]]
    ) -> None:
        w = self.w
        w(
            '<table class="tests"><thead><tr><th>test</th><th>outcome</th><th>suite</th>'
            '<th class="n">runs</th><th class="n">iterations</th><th class="n">tool calls</th>'
            '<th class="n">tokens</th><th class="n">cost</th><th class="n">agent time</th>'
            "<th>cassette</th><th>budget</th></tr></thead>\n<tbody>\n"
        )
        for index, test in enumerate(tests):
            stats = as_map(test.get("stats"))
            cassette = as_map(test.get("cassette"))
            w(
                f'<tr data-test="{index}"><td><a href="#t{index}">{esc(test.get("nodeid", ""))}'
                f"</a></td><td>{badge(test.get('outcome', 'unknown'))}</td>"
                f"<td>{esc(test.get('suite', ''))}</td>"
                f'<td class="n">{fmt_count(stats.get("runs"))}</td>'
                f'<td class="n">{fmt_count(stats.get("iterations"))}</td>'
                f'<td class="n">{fmt_count(stats.get("tool_calls"))}</td>'
                f'<td class="n">{fmt_count(stats.get("total_tokens"))}</td>'
                f'<td class="n">{fmt_cost(stats.get("cost_usd"))}</td>'
                f'<td class="n">{fmt_seconds(stats.get("duration_s"))}</td>'
                f"<td>{badge(cassette['status']) if cassette.get('status') else ''}</td>"
                f"<td>{self._budget_badge(test)}"
                f"{badge('gate', 'failed') if index in gate_lines else ''}</td></tr>\n"
            )
        w("</tbody></table>\n")

    @staticmethod
    def _budget_badge(test: Mapping[str, object]) -> str:
        budget = as_map(test.get("budget"))
        if not budget:
            return ""
        return badge("exceeded") if as_seq(budget.get("exceeded")) else badge("within", "ok")

    # -- one test ------------------------------------------------------------------------

    @staticmethod
    def _needs_attention(test: Mapping[str, object], gate_lines: Sequence[str]) -> bool:
        cassette = as_map(test.get("cassette"))
        repeat = as_map(test.get("repeat"))
        return bool(
            test.get("outcome") == "failed"
            or gate_lines
            or as_seq(as_map(test.get("budget")).get("exceeded"))
            or cassette.get("status") in ("discarded", "unsaved", "stale", "unused", "missing")
            or (repeat and not entry_met(repeat))
            or as_map(test.get("baseline"))
        )

    def test(self, index: int, test: Mapping[str, object], gate_lines: Sequence[str]) -> None:
        w = self.w
        nodeid = str(test.get("nodeid", ""))
        outcome = str(test.get("outcome", "unknown"))
        attention = self._needs_attention(test, gate_lines)
        stats = as_map(test.get("stats"))
        cassette = as_map(test.get("cassette"))
        open_attr = " open" if attention else ""
        w(
            f'<details class="test" id="t{index}" data-nodeid="{esc(nodeid)}" '
            f'data-outcome="{esc(outcome)}" data-attention="{int(attention)}"{open_attr}>'
            f'<summary><span class="nodeid">{esc(nodeid)}</span> {badge(outcome)} '
            f"{badge(test.get('suite', 'unit'))}"
        )
        if cassette.get("status"):
            w(f" {badge(cassette['status'])}")
        w(
            f' <span class="muted">{fmt_count(stats.get("iterations"))} iterations · '
            f"{fmt_count(stats.get('tool_calls'))} tool calls · "
            f"{fmt_count(stats.get('total_tokens'))} tokens · {fmt_cost(stats.get('cost_usd'))}"
            '</span></summary>\n<div class="test-body">\n'
        )
        self.test_facts(test, gate_lines)
        self.failure(f"t{index}", as_map(test.get("failure")))
        self.drift(test)
        w(transcripts_html(as_seq(test.get("transcripts"))))
        runs = [as_map(run) for run in as_seq(test.get("runs"))]
        if not runs:
            w('<p class="muted">No agent run was recorded for this test.</p>\n')
        for number, run in enumerate(runs):
            self.runs.run(f"t{index}-r{number}", run)
        self.verdicts(test)
        for number, run in enumerate(as_map(run) for run in as_seq(test.get("role_runs"))):
            self.runs.run(f"t{index}-j{number}", run)
        w("</div></details>\n")

    def verdicts(self, test: Mapping[str, object]) -> None:
        """The verdicts of the test's judges, and each other role's own cost line."""
        w = self.w
        for item in as_seq(test.get("verdicts")):
            verdict = as_map(item)
            passed = bool(verdict.get("passed"))
            w(
                f'<details class="meta"><summary class="facts">verdict of '
                f"{esc(verdict.get('judge', 'judge'))} on rubric "
                f"<code>{esc(verdict.get('rubric_id', ''))}</code>: "
                f'<span class="{"" if passed else "bad"}">score {esc(verdict.get("score"))} '
                f"{'≥' if passed else '&lt;'} threshold {esc(verdict.get('threshold'))}</span>"
                f" · {esc(verdict.get('rationale', ''))}</summary><pre>"
                f"{esc(verdict.get('rubric', ''))}</pre></details>\n"
            )
        for role, item in as_map(test.get("role_stats")).items():
            stats = as_map(item)
            w(
                f'<div class="facts">{esc(role)} runs (apart from the agent\'s): '
                f"{fmt_count(stats.get('total_tokens'))} tokens · "
                f"{fmt_cost(stats.get('cost_usd'))}</div>\n"
            )

    def test_facts(self, test: Mapping[str, object], gate_lines: Sequence[str]) -> None:
        w = self.w
        cassette = as_map(test.get("cassette"))
        if cassette:
            unused = [str(n) for n in as_seq(cassette.get("unused"))]
            w(
                f'<div class="facts">cassette <code>{esc(cassette.get("path", ""))}</code> · '
                f"mode {esc(cassette.get('mode', ''))} · {badge(cassette.get('status', '?'))} · "
                f"{fmt_count(cassette.get('interactions'))} interactions"
            )
            if unused:
                w(f' · <span class="bad">unused interactions: {esc(", ".join(unused))}</span>')
            eased = as_map(cassette.get("eased"))
            if eased:
                w(
                    f' · <span class="bad">let pass until {esc(eased.get("until", ""))} '
                    "(agent_migration_until)</span>"
                )
            w("</div>\n")
        budget = as_map(test.get("budget"))
        if budget:
            limits = as_map(budget.get("limits"))
            exceeded = {
                str(as_map(item).get("name")): as_map(item)
                for item in as_seq(budget.get("exceeded"))
            }
            parts = []
            for name in sorted(set(limits) | set(exceeded)):
                over = exceeded.get(name)
                if over is not None:
                    parts.append(
                        f'<span class="bad">{esc(name)}: measured '
                        f"{esc(over.get('measured'))} &gt; allowed "
                        f"{esc(over.get('allowed'))}</span>"
                    )
                else:
                    parts.append(f"{esc(name)} ≤ {esc(limits[name])}")
            w(f'<div class="facts">budget: {" · ".join(parts) or "no limit"}</div>\n')
        w(repeat_html(as_map(test.get("repeat"))))
        for line in gate_lines:
            w(f'<div class="facts bad">gate: {esc(line)}</div>\n')
        contract = as_map(test.get("mcp_contract"))
        for server, tools in contract.items():
            names = [str(as_map(tool).get("name", "?")) for tool in as_seq(tools)]
            w(
                f'<details class="meta"><summary class="facts">MCP server <code>{esc(server)}'
                f"</code> tool contract: {esc(', '.join(names) or 'no tool')}</summary><pre>"
                f"{esc(as_json(tools))}</pre></details>\n"
            )

    # -- why it failed, and how it drifted ----------------------------------------------

    def failure(self, test_id: str, failure: Mapping[str, object]) -> None:
        """The failure text of a failed test, open, collapsible, escaped as it is."""
        if not failure:
            return
        w = self.w
        phase = str(failure.get("phase") or "call")
        w(
            f'<details class="failure" id="{test_id}-failure" open><summary>'
            f"{badge('failed')} in {esc(phase)}"
        )
        message = failure.get("message")
        if message:
            w(f' <span class="mono">{esc(message)}</span>')
        w(f'</summary>\n<pre class="failure-text">{esc(failure.get("text", ""))}</pre>')
        if failure.get("truncated"):
            w(
                f'<div class="facts">{fmt_count(failure.get("cut"))} characters were cut from '
                "the middle of this text; the terminal output and the JUnit XML have it "
                "all.</div>"
            )
        w("</details>\n")

    def drift(self, test: Mapping[str, object]) -> None:
        """The baseline run and this run side by side, for a test that drifted from it."""
        before = as_map(as_map(test.get("baseline")).get("stats"))
        if not before:
            return
        after = as_map(test.get("stats"))
        w = self.w
        w(
            '<div class="drift"><table class="drift"><thead><tr><th>drift from the '
            "baseline</th><th>baseline</th><th>this run</th></tr></thead><tbody>"
        )
        was = [str(name) for name in as_seq(before.get("trajectory"))]
        now = [str(name) for name in as_seq(after.get("trajectory"))]
        changed = ' class="changed"' if was != now else ""
        w(
            f"<tr{changed}><th>trajectory</th><td>{_trajectory_cell(was, now)}</td>"
            f"<td>{_trajectory_cell(now, was)}</td></tr>"
        )
        for label, key, shown in (
            ("iterations", "iterations", fmt_count),
            ("tool calls", "tool_calls", fmt_count),
            ("tokens", "total_tokens", fmt_count),
            ("cost", "cost_usd", fmt_cost),
        ):
            one, two = shown(before.get(key)), shown(after.get(key))
            changed = ' class="changed"' if one != two else ""
            w(f"<tr{changed}><th>{label}</th><td>{esc(one)}</td><td>{esc(two)}</td></tr>")
        w("</tbody></table></div>\n")


def _trajectory_cell(names: Sequence[str], other: Sequence[str]) -> str:
    """A run's tool calls in order, numbered; those that differ from ``other`` at the same
    position are marked."""
    if not names:
        return '<span class="muted">no tool call</span>'
    items = []
    for position, name in enumerate(names):
        same = position < len(other) and other[position] == name
        css = "" if same else ' class="diff"'
        items.append(f"<li{css}>{esc(name)}</li>")
    return f'<ol class="trajectory">{"".join(items)}</ol>'


def render_html(report: Mapping[str, object]) -> str:
    """The HTML page of a JSON report (the dict ``--agent-report`` writes).

    One self-contained document: inline CSS and JavaScript, no external resource, every
    text from the report escaped; the same report always gives the same string. A summary
    and a table of the tests come first, then each test's runs as timelines of iterations,
    collapsed until clicked, with sub-agent runs nested in the iteration that made them.
    """
    return _Page().document(report)
