"""End to end: other tools' evaluators re-judged with ``--agent-record=judge``.

Each example of examples/evals_* (pydantic-evals' ``LLMJudge``, langwatch-scenario's
simulated user and ``JudgeAgent``, DeepEval's ``GEval``) is copied with its cassette into a
project of its own and run with ``--agent-record=judge``: the judge's calls go to the
example's scripted server again and replace their recordings, while the agent's (and the
simulated user's) are replayed and left in the file as they were. The project then replays
offline, as before. Each run is a process of its own: after an in-process run of
langwatch-scenario, the next one in the same process no longer finds the installed
distributions' metadata.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: The inner runs' ini: the suite's, and what importing langwatch-scenario warns of.
INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings =
    error
    ignore:'audioop' is deprecated:DeprecationWarning
"""

#: Each example, and the roles of its recorded calls in order.
ROLES = {
    "evals_pydantic": ["agent", "judge"],
    "evals_scenario": ["user_sim", "agent", "judge"],
    "evals_deepeval": ["agent", "judge"],
}


def _interactions(project: Path, example: str) -> list[dict[str, Any]]:
    [cassette] = (project / example / "cassettes").rglob("*.json")
    data: dict[str, Any] = json.loads(cassette.read_text(encoding="utf-8"))
    interactions: list[dict[str, Any]] = data["interactions"]
    return interactions


def _role(interaction: dict[str, Any]) -> str:
    return str(interaction.get("role", "agent"))


@pytest.fixture(params=sorted(ROLES))
def example(request: pytest.FixtureRequest, agent_pytester: pytest.Pytester) -> str:
    name: str = request.param
    shutil.copytree(EXAMPLES / name, agent_pytester.path / name)
    agent_pytester.makeini(INI)
    return name


def test_record_judge_replaces_only_the_judges_recordings(
    agent_pytester: pytest.Pytester, example: str
) -> None:
    before = _interactions(agent_pytester.path, example)
    assert [_role(item) for item in before] == ROLES[example]

    judged = agent_pytester.runpytest_subprocess(
        example, "-p", "no:cacheprovider", "--agent-record=judge"
    )

    judged.assert_outcomes(passed=1)
    after = _interactions(agent_pytester.path, example)
    assert [_role(item) for item in after] == ROLES[example]
    for old, new in zip(before, after, strict=True):
        if _role(old) == "judge":
            # recorded again, from the server this run started (another port)
            assert new["request"]["url"] != old["request"]["url"]
        else:
            assert json.dumps(new, sort_keys=True) == json.dumps(old, sort_keys=True)
    # and it replays offline: the example's server fixture fails a replay that sends it
    # any request
    agent_pytester.runpytest_subprocess(example, "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_changed_pydantic_evals_rubric_is_a_judge_miss_with_its_diff(
    agent_pytester: pytest.Pytester,
) -> None:
    shutil.copytree(EXAMPLES / "evals_pydantic", agent_pytester.path / "evals_pydantic")
    agent_pytester.makeini(INI)
    module = agent_pytester.path / "evals_pydantic" / "test_evals_pydantic.py"
    source = module.read_text(encoding="utf-8")
    module.write_text(source.replace("is polite and names", "is warm and names"), encoding="utf-8")

    result = agent_pytester.runpytest_subprocess("evals_pydantic", "-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*The judge's rubric changed since interaction #1 was recorded*",
            "*-The answer is polite and names the order number it is about.",
            "*+The answer is warm and names the order number it is about.",
            "*re-record the judges' calls alone*: pytest --agent-record=judge *",
        ]
    )
