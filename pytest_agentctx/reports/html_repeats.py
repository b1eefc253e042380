"""A repeated test's pass rate on the HTML page: the runs that passed, the rate's interval
drawn as a small bar (the interval, the rate, the target), the test's stability, pass@k
and pass^k, the pass^k target, and each judge's mean score with its interval.

Everything comes from the test's ``repeat`` entry (:meth:`RepeatTally.to_dict`); a report
written before intervals (no ``interval``) shows the rate alone. Every text is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_agentctx.reports.html_text import as_map, as_number, as_seq, esc, fmt_count
from pytest_agentctx.reports.repeats import entry_met

#: The bar's size in pixels.
_WIDTH, _HEIGHT = 160, 14


def _x(share: float) -> str:
    return f"{max(0.0, min(1.0, share)) * _WIDTH:.1f}"


def interval_svg(low: float, high: float, rate: float, target: float | None) -> str:
    """An inline SVG bar from 0% to 100%: the interval as a band, the rate as a dot, the
    target (``min_pass_rate``, when below 1) as a line; its title says it in words."""
    title = f"pass rate {rate:.0%}, interval {low:.0%} to {high:.0%}"
    target_mark = ""
    if target is not None and 0 < target < 1:
        title += f", target {target:.0%}"
        target_mark = (
            f'<line class="target" x1="{_x(target)}" x2="{_x(target)}" y1="0" '
            f'y2="{_HEIGHT}" stroke="#b00" stroke-width="2"/>'
        )
    middle = _HEIGHT / 2
    return (
        f'<svg class="interval" width="{_WIDTH}" height="{_HEIGHT}" role="img" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}"><title>{esc(title)}</title>'
        f'<rect x="0" y="{middle - 1}" width="{_WIDTH}" height="2" fill="#ccc"/>'
        f'<rect class="band" x="{_x(low)}" y="2" width="{float(_x(high)) - float(_x(low)):.1f}" '
        f'height="{_HEIGHT - 4}" fill="#7aa7d8"/>{target_mark}'
        f'<circle class="rate" cx="{_x(rate)}" cy="{middle}" r="3.5" fill="#123"/></svg>'
    )


def _estimates(repeat: Mapping[str, object]) -> str:
    at, hat = as_map(repeat.get("pass_at_k")), as_map(repeat.get("pass_hat_k"))
    shown = [
        f"pass@{esc(k)} {as_number(at.get(k), 0):.0%}, pass^{esc(k)} {as_number(hat.get(k), 0):.0%}"
        for k in at
    ]
    target = as_map(repeat.get("min_pass_hat_k"))
    if target:
        shown.append(f"pass^{esc(target.get('k'))} target {as_number(target.get('target'), 0):.0%}")
    return "".join(f" · {part}" for part in shown)


def _scores(repeat: Mapping[str, object]) -> str:
    parts: list[str] = []
    for item in as_seq(repeat.get("scores")):
        score = as_map(item)
        low, high = (as_number(value, 0) for value in (as_seq(score.get("interval")) or (0, 0)))
        parts.append(
            f'<div class="facts">judge {esc(score.get("judge"))} · rubric '
            f"<code>{esc(score.get('rubric_id'))}</code>: mean score "
            f"{as_number(score.get('mean'), 0):.3g} over {fmt_count(score.get('n'))} runs "
            f"({as_number(score.get('confidence'), 0.95):.0%} interval {low:.3g} to "
            f"{high:.3g})</div>\n"
        )
    return "".join(parts)


def repeat_html(repeat: Mapping[str, object]) -> str:
    """The page's fragment for a test's ``repeat`` entry ("" when it has none)."""
    if not repeat:
        return ""
    rate = as_number(repeat.get("pass_rate"), 0)
    target = as_number(repeat.get("min_pass_rate"), 1)
    rule = "rule point" if repeat.get("rule") == "point" else "its interval's lower bound"
    text = (
        f"repeated: {fmt_count(repeat.get('passed'))} of {fmt_count(repeat.get('runs'))} runs "
        f"passed (pass rate {rate:.0%}"
    )
    interval = as_seq(repeat.get("interval"))
    bar = ""
    if len(interval) == 2:
        low, high = (as_number(value, 0) for value in interval)
        confidence = as_number(repeat.get("confidence"), 0.95)
        method = "Wilson " if repeat.get("method") == "wilson" else ""
        text += (
            f"; {confidence:.0%} {method}interval {low:.0%} to {high:.0%}, "
            f"{esc(repeat.get('stability', ''))}"
        )
        bar = " " + interval_svg(low, high, rate, target)
    text += f"), min_pass_rate {target:.0%}"
    if 0 < target < 1 and "rule" in repeat:
        text += f" ({rule})"
    text += _estimates(repeat)
    shown = text if entry_met(repeat) else f'<span class="bad">{text}</span>'
    return f'<div class="facts">{shown}{bar}</div>\n{_scores(repeat)}'
