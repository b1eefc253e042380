"""The HTML report in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) driven by Selenium.

The page is rendered from a report of real runs (the runtime, the openai SDK and the
scripted model), opened from a file (``file://``, nothing served, no network), and must
render, open an iteration on a click and log no error in the console; so must the page a
pytest run writes with ``--agent-report-html``. Skipped, with the reason, only where
Chromium or its driver is not installed (``.ci/run`` installs both).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from pytest_agentctx import Agent, AgentRuntime, FakeLLM, SequentialIds, StepClock, tool
from pytest_agentctx.reports.figures import run_stats
from pytest_agentctx.reports.html import render_html

#: A message that would run if the page did not escape it.
INJECTED = "<script>window.__pwned = true</script><img src=x onerror='window.__pwned = true'>"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1600",
)


def _installed(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


@tool
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return f"18°C and sunny in {city}"


@tool
def research(topic: str) -> str:
    """Notes on a topic."""
    return f"notes on {topic}"


AGENT = Agent(
    name="weather",
    model="openai:gpt-4o-mini",
    system_prompt="You are a concise weather assistant.",
    tools=[get_weather, research],
    max_iterations=5,
)


def _entry(nodeid: str, context: dict[str, Any], stats: Mapping[str, object], **fields: Any) -> Any:
    entry = {
        "nodeid": nodeid,
        "outcome": "passed",
        "suite": "unit",
        "cassette": {
            "path": "cassettes/test_weather/run.json",
            "mode": "none",
            "status": "replayed",
            "interactions": 3,
            "unused": [],
        },
        "budget": None,
        "repeat": None,
        "stats": stats,
        "runs": [{"name": "weather", "source": "runtime", "stats": stats, "context": context}],
    }
    entry.update(fields)
    return entry


def _report() -> dict[str, Any]:
    """Three tests of one real run with a sub-agent run in its first iteration."""
    runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds())
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "sk-browser-test")
        with FakeLLM() as fake:
            fake.reply(
                tool_calls=[("get_weather", {"city": "Paris"}), ("research", {"topic": "rain"})]
            )
            fake.reply_tool_call("get_weather", city="Lyon")
            fake.reply(f"18°C in Paris. {INJECTED}")
            main = runtime.run_sync(AGENT, "Weather in Paris?")
            fake.reply_tool_call("research", topic="Paris climate")
            fake.reply("Mild and wet.")
            sub = runtime.run_sync(AGENT, "Research the climate of Paris")
    context = main.context.model_dump(mode="json")
    context["iterations"][0]["metadata"]["subagents"] = {
        "researcher": {"context": sub.context.model_dump(mode="json")}
    }
    stats = run_stats(main.context).to_dict()
    over = {
        "limits": {"max_tokens": 100},
        "exceeded": [{"name": "max_tokens", "measured": stats["total_tokens"], "allowed": 100}],
    }
    tests = [
        _entry("tests/test_weather.py::test_paris", context, stats),
        _entry("tests/test_weather.py::test_lyon", context, stats, outcome="failed", budget=over),
        _entry("tests/test_other.py::test_rain", context, stats),
    ]
    return {
        "format": "pytest-agentctx-report",
        "version": 2,
        "summary": {
            "tests": 3,
            "passed": 2,
            "failed": 1,
            "skipped": 0,
            "unit": 3,
            "integration": 0,
            "stats": stats,
            "gate": {
                "enabled": True,
                "passed": False,
                "failures": ["tests/test_weather.py::test_lyon: max_tokens over budget"],
                "records": [
                    {
                        "nodeid": "tests/test_weather.py::test_lyon",
                        "kind": "budget",
                        "measure": "max_tokens",
                        "baseline": None,
                        "now": 328,
                        "allowed": 200,
                        "interval": None,
                        "p_value": None,
                        "verdict": "fail",
                        "message": "tests/test_weather.py::test_lyon: max_tokens over budget",
                    }
                ],
            },
        },
        "tests": tests,
    }


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    chromium = _installed("chromium", "chromium-browser")
    driver = _installed("chromedriver")
    if chromium is None or driver is None:
        missing = " and ".join(
            name
            for name, path in (("chromium", chromium), ("chromedriver", driver))
            if path is None
        )
        pytest.skip(
            f"Chromium is not installed ({missing} not found on PATH): the HTML report's "
            "browser test needs Debian's chromium and chromium-driver "
            "(apt-get install -y chromium chromium-driver; .ci/run installs them)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    with tempfile.TemporaryDirectory(prefix="agentctx-chromium-") as profile:
        for flag in (*FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        session = webdriver.Chrome(service=Service(executable_path=driver), options=options)
        try:
            session.set_page_load_timeout(30)
            yield session
        finally:
            session.quit()


@pytest.fixture(scope="module")
def page_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render_html(_report()), encoding="utf-8")
    return path.as_uri()


def _console(browser: webdriver.Chrome) -> list[dict[str, Any]]:
    """The browser console's new entries (selenium's get_log has no annotations)."""
    entries: list[dict[str, Any]] = browser.get_log("browser")  # type: ignore[no-untyped-call]
    return entries


@pytest.fixture
def page(browser: webdriver.Chrome, page_url: str) -> Iterator[webdriver.Chrome]:
    """The report, freshly loaded; after the test, the console must hold no error."""
    _console(browser)  # drop what an earlier test left
    browser.get(page_url)
    yield browser
    errors = [entry for entry in _console(browser) if entry.get("level") in ("SEVERE", "ERROR")]
    assert errors == [], f"the page logged errors in the console: {errors}"


def _iteration(browser: WebDriver, element_id: str) -> WebElement:
    return browser.find_element(By.ID, element_id)


def test_the_page_renders_its_summary_and_every_test(page: WebDriver) -> None:
    assert page.title == "pytest-agentctx report"
    cards = [card.text.split("\n") for card in page.find_elements(By.CSS_SELECTOR, ".card")]
    assert cards[:3] == [["3", "tests"], ["2", "passed"], ["1", "failed"]]
    assert len(page.find_elements(By.CSS_SELECTOR, "details.test")) == 3
    assert "Gate: failed (1 failure)" in page.find_element(By.ID, "gate").text
    assert page.find_element(By.ID, "shown").text == "3"


def test_a_failed_test_is_open_and_the_others_are_closed(page: WebDriver) -> None:
    opened = [
        element.get_attribute("data-nodeid")
        for element in page.find_elements(By.CSS_SELECTOR, "details.test")
        if element.get_attribute("open") is not None
    ]
    assert opened == ["tests/test_weather.py::test_lyon"]


def test_an_iteration_expands_on_click(page: WebDriver) -> None:
    iteration = _iteration(page, "t1-r0-i1")
    first_call = iteration.find_element(By.CSS_SELECTOR, ".call pre")
    assert iteration.get_attribute("open") is None
    assert not first_call.is_displayed()

    iteration.find_element(By.TAG_NAME, "summary").click()

    assert iteration.get_attribute("open") is not None
    assert first_call.is_displayed()
    assert first_call.text == '{"city": "Paris"}'
    results = [pre.text for pre in iteration.find_elements(By.CSS_SELECTOR, ".call pre")]
    assert "18°C and sunny in Paris" in results


def test_a_timeline_segment_opens_its_iteration(page: WebDriver) -> None:
    iteration = _iteration(page, "t1-r0-i3")
    assert iteration.get_attribute("open") is None

    page.find_element(By.CSS_SELECTOR, '#t1-r0 > .timeline a[href="#t1-r0-i3"]').click()

    assert iteration.get_attribute("open") is not None
    assert "18°C in Paris." in iteration.find_element(By.CSS_SELECTOR, ".it-body").text


def test_a_sub_agent_run_opens_inside_its_parent_iteration(page: WebDriver) -> None:
    _iteration(page, "t1-r0-i1").find_element(By.TAG_NAME, "summary").click()
    nested = _iteration(page, "t1-r0-i1-s0-i1")
    assert nested.is_displayed()

    nested.find_element(By.TAG_NAME, "summary").click()

    assert "Research the climate of Paris" in nested.text


def test_a_script_in_a_message_is_shown_as_text_and_never_runs(page: WebDriver) -> None:
    _iteration(page, "t1-r0-i3").find_element(By.TAG_NAME, "summary").click()

    assert INJECTED in _iteration(page, "t1-r0-i3").text
    assert page.execute_script("return window.__pwned === undefined") is True


def test_the_filter_hides_the_tests_that_do_not_match(page: WebDriver) -> None:
    page.find_element(By.ID, "filter").send_keys("test_weather")

    shown = [
        element.get_attribute("data-nodeid")
        for element in page.find_elements(By.CSS_SELECTOR, "details.test")
        if element.is_displayed()
    ]
    assert shown == ["tests/test_weather.py::test_paris", "tests/test_weather.py::test_lyon"]
    assert page.find_element(By.ID, "shown").text == "2"


def test_the_page_needs_nothing_from_the_network(page: WebDriver) -> None:
    resources = page.execute_script(
        "return performance.getEntriesByType('resource').map(function (e) { return e.name; })"
    )
    assert resources == []
    assert Path(page.current_url.removeprefix("file://")).is_file()


PLUGIN_RUN = '''
from pytest_agentctx import Agent, tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


AGENT = Agent(name="calc", model="openai:gpt-4o-mini", tools=[add])


async def test_adds(agent_runtime, fake_llm):
    fake_llm.reply_tool_call("add", a=2, b=3).reply("2 + 3 = 5")
    result = await agent_runtime.run(AGENT, "What is 2 + 3?")
    assert result.output == "2 + 3 = 5"
'''


def test_the_page_the_plugin_writes_opens_an_iteration_on_click(
    browser: webdriver.Chrome, agent_pytester: pytest.Pytester
) -> None:
    agent_pytester.makepyfile(test_calc=PLUGIN_RUN)
    # in a process of its own: an in-process run also collects what this worker's garbage
    # holds (an earlier test's event loop), which pytest 8.4 turns into an error of the run
    result = agent_pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--agent-report-html=report.html", timeout=120
    )
    result.assert_outcomes(passed=1)
    _console(browser)  # drop what an earlier test left

    browser.get((agent_pytester.path / "report.html").as_uri())
    browser.find_element(By.CSS_SELECTOR, "#t0 > summary").click()
    iteration = _iteration(browser, "t0-r0-i1")
    iteration.find_element(By.TAG_NAME, "summary").click()

    assert iteration.get_attribute("open") is not None
    call = iteration.find_element(By.CSS_SELECTOR, ".call")
    assert call.is_displayed()
    assert [pre.text for pre in call.find_elements(By.TAG_NAME, "pre")] == ['{"a": 2, "b": 3}', "5"]
    assert _console(browser) == []
