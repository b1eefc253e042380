"""A repeated test's pass rate on the HTML page: the rate with its interval drawn, the
stability, the rule, pass@k and pass^k, the judges' mean scores, and a rate that missed
its gate marked."""

from __future__ import annotations

import re

from pytest_agentctx.reports.html_repeats import interval_svg, repeat_html
from pytest_agentctx.reports.repeats import RepeatSpec, RepeatTally, entry_met


def entry(outcomes: str, spec: RepeatSpec) -> dict[str, object]:
    counted = RepeatTally(spec)
    for index, letter in enumerate(outcomes, start=1):
        counted.observe(index, "call", "passed" if letter == "p" else "failed")
    return dict(counted.to_dict())


def test_the_rate_shows_its_interval_and_stability() -> None:
    html = repeat_html(entry("ppppf", RepeatSpec(5, 0.8, rule="point")))

    assert "repeated: 4 of 5 runs passed (pass rate 80%; 95% interval 28% to 99%, " in html
    assert "stochastic), min_pass_rate 80% (rule point)" in html


def test_a_wilson_interval_is_named() -> None:
    html = repeat_html(entry("ppppf", RepeatSpec(5, 0.8, rule="point", interval="wilson")))

    assert "(pass rate 80%; 95% Wilson interval 38% to 96%, " in html


def test_the_bar_draws_the_interval_the_rate_and_the_target() -> None:
    svg = interval_svg(0.25, 0.75, 0.5, 0.6)

    assert '<rect class="band" x="40.0" y="2" width="80.0"' in svg
    assert '<circle class="rate" cx="80.0"' in svg
    assert '<line class="target" x1="96.0" x2="96.0"' in svg
    assert "<title>pass rate 50%, interval 25% to 75%, target 60%</title>" in svg


def test_a_target_of_every_run_draws_no_line() -> None:
    assert "<line" not in interval_svg(0.5, 1.0, 1.0, 1.0)


def test_a_rate_above_its_target_but_not_shown_by_the_interval_is_marked() -> None:
    html = repeat_html(entry("ppppf", RepeatSpec(5, 0.8)))

    assert re.search(r'<span class="bad">repeated: 4 of 5 runs passed', html)
    assert "(its interval's lower bound)" in html


def test_a_rate_that_met_its_gate_is_not_marked() -> None:
    assert 'class="bad"' not in repeat_html(entry("p" * 17, RepeatSpec(17, 0.8)))


def test_pass_at_k_pass_hat_k_and_the_target_are_listed() -> None:
    html = repeat_html(entry("pppfpppfpp", RepeatSpec(10, 0.0, k=(3,), min_pass_hat_k=0.4)))

    assert " · pass@3 100%, pass^3 47% · pass^3 target 40%" in html


def test_a_report_from_before_intervals_shows_the_rate_alone() -> None:
    old = {"runs": 5, "passed": 4, "pass_rate": 0.8, "min_pass_rate": 0.8}

    html = repeat_html(old)

    assert "<svg" not in html
    assert "repeated: 4 of 5 runs passed (pass rate 80%), min_pass_rate 80%" in html
    assert entry_met(old)


def test_the_judges_mean_scores_show_with_their_interval() -> None:
    repeat = {
        **entry("pp", RepeatSpec(2)),
        "scores": [
            {
                "judge": "<judge>",
                "rubric_id": "polite",
                "n": 2,
                "mean": 0.85,
                "interval": [0.8, 0.9],
                "confidence": 0.95,
            }
        ],
    }

    html = repeat_html(repeat)

    assert "judge &lt;judge&gt; · rubric <code>polite</code>: mean score 0.85 over 2 runs " in html
    assert "(95% interval 0.8 to 0.9)" in html
