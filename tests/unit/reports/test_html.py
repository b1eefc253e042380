"""The HTML report: one self-contained, deterministic, escaped page of a JSON report."""

from __future__ import annotations

import copy
import re
import time
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from importlib import resources
from typing import Any

from pytest_agentctx import AgentContext, ToolCall, ToolResult, matches
from pytest_agentctx.reports.figures import run_stats
from pytest_agentctx.reports.gate_records import GateRecord
from pytest_agentctx.reports.html import render_html

T0 = datetime(2025, 1, 1, tzinfo=UTC)
SCRIPT = "<script>alert('pwned')</script>"
ESCAPED_SCRIPT = "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;"
VOID = frozenset({"meta", "input", "br", "hr", "img", "link"})


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _context(answer: str = "18°C in Paris.", sub: AgentContext | None = None) -> AgentContext:
    """Two iterations: a tool call with its result, then the answer."""
    ctx = AgentContext.new("Weather in Paris?", system_prompt="Be concise.", at=_at(0))
    ctx = ctx.add_assistant_message(
        None, [ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})], at=_at(1)
    )
    metadata: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "provider": "openai",
        "usage": {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150},
    }
    if sub is not None:
        metadata["subagents"] = {"researcher": {"context": sub.model_dump(mode="json")}}
    ctx = ctx.with_iteration_metadata(metadata)
    ctx = ctx.add_tool_results(
        [ToolResult(tool_call_id="call_1", name="get_weather", content="18°C, sunny")], at=_at(2)
    )
    ctx = ctx.with_iteration_metadata(
        {"model": "gpt-4o-mini", "usage": {"input_tokens": 170, "output_tokens": 8}}
    )
    return ctx.add_assistant_message(answer, at=_at(3.5))


def _test(nodeid: str, context: AgentContext, **fields: Any) -> dict[str, Any]:
    stats = run_stats(context).to_dict()
    test: dict[str, Any] = {
        "nodeid": nodeid,
        "outcome": "passed",
        "suite": "unit",
        "cassette": None,
        "budget": None,
        "repeat": None,
        "stats": stats,
        "runs": [
            {
                "name": "weather",
                "source": "runtime",
                "stats": stats,
                "context": context.model_dump(mode="json"),
            }
        ],
    }
    test.update(fields)
    return test


def _report(*tests: dict[str, Any], failures: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    """A report of ``tests`` whose gate failed with a drift record per ``(nodeid, text)``
    of ``failures`` (its message ``nodeid: text``)."""
    records = [
        GateRecord(nodeid, "drift", "iterations", f"{nodeid}: {text}").to_dict()
        for nodeid, text in failures
    ]
    return {
        "format": "pytest-agentctx-report",
        "version": 1,
        "summary": {
            "tests": len(tests),
            "passed": sum(t["outcome"] == "passed" for t in tests),
            "failed": sum(t["outcome"] == "failed" for t in tests),
            "skipped": 0,
            "unit": len(tests),
            "integration": 0,
            "stats": tests[0]["stats"] if tests else {},
            "gate": {
                "enabled": True,
                "passed": not failures,
                "failures": [record["message"] for record in records],
                "records": records,
            },
        },
        "tests": list(tests),
    }


class _Tree(HTMLParser):
    """Records, for every element with an id, its tag, attributes and enclosing ids."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, str | None]] = []
        self.elements: dict[str, tuple[str, dict[str, str | None], tuple[str, ...]]] = {}
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        element_id = values.get("id")
        if tag == "script":
            self.scripts += 1
        if element_id is not None:
            ancestors = tuple(i for _, i in self.stack if i is not None)
            self.elements[element_id] = (tag, values, ancestors)
        if tag not in VOID:
            self.stack.append((tag, element_id))

    def handle_endtag(self, tag: str) -> None:
        assert self.stack, f"</{tag}> closes nothing"
        open_tag, _ = self.stack.pop()
        assert open_tag == tag, f"</{tag}> closes <{open_tag}>"


def _parse(page: str) -> _Tree:
    tree = _Tree()
    tree.feed(page)
    tree.close()
    assert tree.stack == [], f"unclosed elements: {tree.stack}"
    return tree


def test_a_script_in_a_message_is_shown_as_text() -> None:
    page = render_html(_report(_test("tests/test_w.py::test_a", _context(answer=SCRIPT))))

    assert ESCAPED_SCRIPT in page
    assert SCRIPT not in page
    assert _parse(page).scripts == 1  # the page's own script only


def test_every_text_from_the_report_is_escaped() -> None:
    nodeid = f"tests/test_w.py::test_a[{SCRIPT}]"
    ctx = _context()
    test = _test(
        nodeid,
        ctx,
        cassette={
            "path": f"cassettes/{SCRIPT}.json",
            "mode": "none",
            "status": "replayed",
            "interactions": 2,
            "unused": [],
        },
    )
    test["runs"][0]["name"] = SCRIPT
    test["runs"][0]["context"]["iterations"][0]["metadata"]["note"] = SCRIPT
    test["runs"][0]["context"]["iterations"][0]["tool_calls"][0]["arguments"] = {"q": SCRIPT}
    page = render_html(_report(test, failures=((nodeid, f"drift {SCRIPT}"),)))

    assert "<script>alert" not in page
    assert _parse(page).scripts == 1
    assert page.count("&lt;script&gt;alert(") >= 6


def test_the_same_report_gives_the_same_bytes() -> None:
    report = _report(
        _test("tests/test_w.py::test_a", _context()),
        _test("tests/test_w.py::test_b", _context(sub=_context())),
    )

    first = render_html(report)

    assert render_html(copy.deepcopy(report)) == first
    assert render_html(report) == first


def test_the_page_loads_nothing_from_outside() -> None:
    page = render_html(_report(_test("tests/test_w.py::test_a", _context())))

    assert re.search(r"\b(src|href)\s*=\s*[\"']?(https?:|//)", page) is None
    assert re.search(r"<link\b|@import|url\(", page) is None
    assert page.startswith("<!DOCTYPE html>")


def test_the_page_inlines_the_stylesheet_and_script_the_package_ships() -> None:
    assets = resources.files("pytest_agentctx.reports") / "report_assets"
    css = (assets / "report.css").read_text(encoding="utf-8")
    js = (assets / "report.js").read_text(encoding="utf-8")

    page = render_html(_report(_test("tests/test_w.py::test_a", _context())))

    assert f"<style>\n{css}</style>" in page
    assert f"<script>\n{js}</script>" in page


def test_each_iteration_is_collapsed_inside_its_run() -> None:
    tree = _parse(render_html(_report(_test("tests/test_w.py::test_a", _context()))))

    match tree.elements["t0-r0-i1"], tree.elements["t0-r0-i2"]:
        case (("details", first, ("t0", "t0-r0")), ("details", second, ("t0", "t0-r0"))):
            assert "open" not in first
            assert "open" not in second
        case other:
            raise AssertionError(f"iterations are not collapsed details in their run: {other}")


def test_an_iteration_shows_its_duration_model_and_tokens() -> None:
    page = render_html(_report(_test("tests/test_w.py::test_a", _context())))

    first = re.search(r'id="t0-r0-i1"><summary>(.*?)</summary>', page)
    second = re.search(r'id="t0-r0-i2"><summary>(.*?)</summary>', page)

    assert first is not None
    assert second is not None
    assert matches(
        re.sub(r"<[^>]+>", "", first.group(1)),
        "#1 +0 ms · 2.00 s · gpt-4o-mini · 150 tokens (120 in / 30 out) · calls get_weather"
        " — user: Weather in Paris?",
    )
    assert re.sub(r"<[^>]+>", "", second.group(1)).startswith(
        "#2 +2.00 s · 1.50 s · gpt-4o-mini · 178 tokens (170 in / 8 out)"
    )


def test_a_tool_call_is_shown_with_its_arguments_and_its_result_once() -> None:
    page = render_html(_report(_test("tests/test_w.py::test_a", _context())))

    call = re.search(r'<div class="call">(.*?)</div>', page, re.S)

    assert call is not None
    assert re.findall(r"<pre>(.*?)</pre>", call.group(1)) == [
        "{&quot;city&quot;: &quot;Paris&quot;}",
        "18°C, sunny",
    ]
    assert page.count("18°C, sunny") == 1


def test_a_sub_agent_run_is_nested_inside_the_iteration_that_made_it() -> None:
    tree = _parse(render_html(_report(_test("tests/test_w.py::test_a", _context(sub=_context())))))

    match tree.elements["t0-r0-i1-s0-i2"]:
        case ("details", _, ("t0", "t0-r0", "t0-r0-i1", "t0-r0-i1-s0")):
            pass
        case other:
            raise AssertionError(f"sub-agent iteration not nested in its parent: {other}")


def test_a_failed_test_is_open_with_its_budget_and_gate_lines() -> None:
    failed = _test(
        "tests/test_w.py::test_b",
        _context(),
        outcome="failed",
        budget={
            "limits": {"max_tokens": 200, "max_iterations": 5},
            "exceeded": [{"name": "max_tokens", "measured": 328, "allowed": 200}],
        },
    )
    report = _report(
        _test("tests/test_w.py::test_a", _context()),
        failed,
        failures=(("tests/test_w.py::test_b", "max_tokens 328 > 200"),),
    )
    page = render_html(report)
    tree = _parse(page)

    assert "open" not in tree.elements["t0"][1]
    assert "open" in tree.elements["t1"][1]
    assert "max_tokens: measured 328 &gt; allowed 200" in page
    assert "max_iterations ≤ 5" in page
    assert "gate: tests/test_w.py::test_b: max_tokens 328 &gt; 200" in page


def test_cassette_status_and_unused_interactions_are_shown() -> None:
    test = _test(
        "tests/test_w.py::test_a",
        _context(),
        cassette={
            "path": "cassettes/test_w/test_a.json",
            "mode": "none",
            "status": "unused",
            "interactions": 3,
            "unused": [1, 2],
        },
    )
    page = render_html(_report(test))

    assert '<span class="badge b-unused">unused</span>' in page
    assert "unused interactions: 1, 2" in page
    assert 'data-attention="1" open' in page


def test_an_empty_report_renders_a_page_with_no_test() -> None:
    page = render_html(_report())

    tree = _parse(page)

    assert "0 of 0 tests shown" in re.sub(r"<[^>]+>", "", page)
    assert [key for key in tree.elements if key.startswith("t")] == []


def test_a_test_without_runs_says_so() -> None:
    test = _test("tests/test_w.py::test_a", _context(), runs=[])

    assert "No agent run was recorded for this test." in render_html(_report(test))


def test_an_unknown_report_format_is_rendered_with_a_warning() -> None:
    report = {**_report(_test("tests/test_w.py::test_a", _context())), "version": 99}

    page = render_html(report)

    assert "this report says <code>pytest-agentctx-report</code> version <code>99</code>" in page


def test_rendering_time_grows_linearly_with_the_tests() -> None:
    one = _test("tests/test_w.py::test_a", _context(sub=_context()))

    def seconds(count: int) -> float:
        tests = [{**one, "nodeid": f"tests/test_w.py::test_{i}"} for i in range(count)]
        report = _report(*tests, failures=tuple((t["nodeid"], "drift") for t in tests))
        best = float("inf")
        for _ in range(3):
            start = time.process_time()
            render_html(report)
            best = min(best, time.process_time() - start)
        return best

    small, large = seconds(40), seconds(400)

    # 10x the tests: about 10x the time when linear, 100x when quadratic
    assert large < small * 30, f"40 tests: {small:.3f} s, 400 tests: {large:.3f} s"


# -- why a test failed, and how it drifted ---------------------------------------------


def _failure(text: str, **fields: Any) -> dict[str, Any]:
    entry = {"phase": "call", "message": "AssertionError: boom", "text": text}
    return {**entry, "truncated": False, "cut": 0, **fields}


def test_a_failed_test_shows_its_failure_text_open_and_escaped() -> None:
    failed = _test(
        "tests/test_w.py::test_b",
        _context(),
        outcome="failed",
        failure=_failure(f"E   AssertionError: {SCRIPT}"),
    )
    page = render_html(_report(failed))
    tree = _parse(page)

    tag, attributes, ancestors = tree.elements["t0-failure"]
    assert (tag, "open" in attributes, ancestors) == ("details", True, ("t0",))
    assert f"E   AssertionError: {ESCAPED_SCRIPT}" in page
    assert SCRIPT not in page
    assert "in call" in page


def test_a_cut_failure_text_says_how_much_was_cut() -> None:
    failed = _test(
        "tests/test_w.py::test_b",
        _context(),
        outcome="failed",
        failure=_failure("E   ...", truncated=True, cut=123456),
    )

    assert "123,456 characters were cut from the middle" in render_html(_report(failed))


def test_a_passed_test_shows_no_failure() -> None:
    page = render_html(_report(_test("tests/test_w.py::test_a", _context(), failure=None)))

    assert "t0-failure" not in _parse(page).elements


def test_a_drifted_test_shows_the_baseline_run_beside_its_own() -> None:
    drifted = _test(
        "tests/test_w.py::test_a",
        _context(),
        baseline={
            "stats": {
                "iterations": 1,
                "tool_calls": 0,
                "total_tokens": 90,
                "cost_usd": None,
                "trajectory": [],
            }
        },
    )
    page = render_html(_report(drifted))
    table = page[
        page.index('<table class="drift">') : page.index("</table>", page.index('class="drift"'))
    ]

    rows = re.findall(
        r"<tr( class=\"changed\")?><th>([^<]+)</th><td>(.*?)</td><td>(.*?)</td></tr>", table
    )
    assert [(label, bool(changed)) for changed, label, _, _ in rows] == [
        ("trajectory", True),
        ("iterations", True),
        ("tool calls", True),
        ("tokens", True),
        ("cost", True),
    ]
    assert rows[0][2] == '<span class="muted">no tool call</span>'
    assert rows[0][3] == '<ol class="trajectory"><li class="diff">get_weather</li></ol>'
    assert [row[2:] for row in rows[1:4]] == [("1", "2"), ("0", "1"), ("90", "328")]
    assert 'data-attention="1"' in page


def test_a_test_without_a_baseline_entry_shows_no_drift_table() -> None:
    page = render_html(_report(_test("tests/test_w.py::test_a", _context())))

    assert '<table class="drift">' not in page


def _mcp_entry(tool_call_id: str | None, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "server": "weather_server",
        "transport": "stdio",
        "tool": "get_weather",
        "arguments": {"city": "Paris"},
        "tool_call_id": tool_call_id,
        "result": None,
        "is_error": False,
        "error": None,
        "exchanges": [1],
    }
    entry.update(fields)
    return entry


def _with_mcp(*entries: dict[str, Any]) -> AgentContext:
    ctx = _context()
    first = ctx.iterations[0]
    changed = first.model_copy(update={"metadata": {**first.metadata, "mcp": list(entries)}})
    return ctx.model_copy(update={"iterations": [changed, *ctx.iterations[1:]]})


def test_an_mcp_call_is_shown_beside_the_tool_call_it_joined() -> None:
    page = render_html(_report(_test("t.py::t", _with_mcp(_mcp_entry("call_1", is_error=True)))))

    call = re.search(r'<div class="call">(.*?)</div>', page, re.S)

    assert call is not None
    assert '<span class="label">MCP</span> <span class="mono">weather_server</span>' in call.group(
        1
    )
    assert '<span class="badge b-error">isError</span>' in call.group(1)


def test_an_unjoined_mcp_call_is_listed_in_its_iteration() -> None:
    page = render_html(_report(_test("t.py::t", _with_mcp(_mcp_entry(None, tool="ping")))))

    assert "MCP calls, no model call</span>" in page
    assert '<b class="mono">ping</b>' in page


def test_the_mcp_tool_contract_is_shown_with_the_test() -> None:
    contract = {"weather_server": [{"name": "get_weather", "inputSchema": {"type": "object"}}]}

    page = render_html(_report(_test("t.py::t", _context(), mcp_contract=contract)))

    assert "MCP server <code>weather_server</code> tool contract: get_weather" in page


def test_a_tests_gate_failures_come_from_the_records_node_id_not_the_text() -> None:
    nodeid = "tests/test_w.py::test_a"
    report = _report(_test(nodeid, _context()))
    record = GateRecord(nodeid, "budget", "max_tokens", "over budget: max_tokens 9 > 5")
    report["summary"]["gate"].update(passed=False, records=[record.to_dict()])

    page = render_html(report)

    assert "gate: over budget: max_tokens 9 &gt; 5" in page
    assert "open" in _parse(page).elements["t0"][1]


def test_the_page_shows_the_flips_of_the_baseline_comparison() -> None:
    report = _report(_test("tests/test_w.py::test_a", _context()))
    flip = GateRecord("tests/test_w.py::test_a", "flip", "outcome", "m", "info", "passed", "failed")
    report["summary"]["gate"]["records"] = [flip.to_dict()]

    page = render_html(report)

    assert "<caption>flips (1)</caption>" in page
    assert (
        "<tr><td>tests/test_w.py::test_a</td><td>outcome</td><td>"
        '<span class="badge b-passed">passed</span></td><td>'
        '<span class="badge b-failed">failed</span></td></tr>'
    ) in page


def test_a_version_1_report_shows_its_gate_failures_in_the_summary_only() -> None:
    nodeid = "tests/test_w.py::test_a"
    report = _report(_test(nodeid, _context()))
    report["version"] = 1
    report["summary"]["gate"] = {"enabled": True, "passed": False, "failures": [f"{nodeid}: x"]}

    page = render_html(report)

    assert f'<li class="mono">{nodeid}: x</li>' in page
    assert "gate: " not in page
    assert "This page was made for" not in page
