"""The project's own CI (.github/workflows/ci.yml) runs what the Makefile checks.

* A ``test`` job runs ``make test`` on every Python the package supports.
* A ``docs`` job builds the documentation site with ``make docs`` (strict), in the same
  Debian Python image and with the same pip cache as the other jobs.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


def _jobs() -> dict[str, Any]:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    jobs = workflow.get("jobs")
    assert isinstance(jobs, dict), f"{WORKFLOW} has no jobs mapping: {jobs!r}"
    return jobs


def _runs(job: dict[str, Any]) -> str:
    return "\n".join(step.get("run", "") for step in job.get("steps", []))


def _uses(job: dict[str, Any]) -> list[str]:
    return [step["uses"].split("@", 1)[0] for step in job.get("steps", []) if "uses" in step]


def test_the_test_job_runs_make_test_on_every_supported_python() -> None:
    job = _jobs()["test"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    classifiers = project["classifiers"]
    supported = {c.rsplit(" ", 1)[1] for c in classifiers if re.search(r":: 3\.\d+$", c)}

    assert set(job["strategy"]["matrix"]["python"]) == supported
    assert "make test " in _runs(job)


def test_the_docs_job_runs_make_docs() -> None:
    jobs = _jobs()

    assert "docs" in jobs, f"{WORKFLOW} has no docs job; its jobs: {sorted(jobs)}"
    assert "make docs" in _runs(jobs["docs"])


def test_the_docs_job_runs_in_the_debian_image_with_the_pip_cache() -> None:
    job = _jobs()["docs"]
    caches = [s for s in job["steps"] if s.get("uses", "").startswith("actions/cache@")]

    assert job["container"] == "python:3.12-bookworm"
    assert _uses(job)[0] == "actions/checkout"
    assert [c["with"]["path"] for c in caches] == ["~/.cache/pip"]
