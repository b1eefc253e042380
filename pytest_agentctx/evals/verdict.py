"""Verdict: what a judge said of one subject (provisional: the judge's branch defines it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Verdict:
    """A judge's verdict: the score it gave against its rubric, and whether it passed."""

    judge: str
    rubric_id: str
    rubric: str
    score: float
    threshold: float
    rationale: str
    passed: bool

    def to_dict(self) -> dict[str, object]:
        """The verdict as JSON data."""
        return asdict(self)
