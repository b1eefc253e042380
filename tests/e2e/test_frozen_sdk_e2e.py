"""End-to-end: a frozen wall clock and an SDK that nothing imported before the freeze.

While the clock is frozen, ``datetime.datetime`` is freezegun's ``FakeDatetime``; an SDK
imported then (lazily, on the agent's first model call) annotates its pydantic models'
datetime fields with it. Each case runs in a fresh interpreter (``runpytest_subprocess``,
``python -c``), where nothing has imported the SDK yet: in this process it is long
imported, and the crash would not show.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

SDK_CALLS = {
    "anthropic": """
        import anthropic
        with anthropic.Anthropic(max_retries=0) as client:
            reply = client.messages.create(
                model="claude-test", max_tokens=50, messages=[{"role": "user", "content": "Hi"}]
            )
        text = reply.content[0].text
    """,
    "openai": """
        import openai
        with openai.OpenAI(max_retries=0) as client:
            reply = client.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": "Hi"}]
            )
        text = reply.choices[0].message.content
    """,
}


def _indented(code: str, spaces: int) -> str:
    return textwrap.indent(textwrap.dedent(code).strip(), " " * spaces)


@pytest.mark.parametrize("sdk", sorted(SDK_CALLS))
def test_an_sdk_imported_first_under_frozen_clock_answers(
    agent_pytester: pytest.Pytester, sdk: str
) -> None:
    agent_pytester.makepyfile(
        f"""
        import sys


        def test_first_model_call(frozen_clock, fake_llm):
            assert "{sdk}" not in sys.modules, "the case needs an SDK not imported yet"
            fake_llm.reply("Sunny.")
{_indented(SDK_CALLS[sdk], 12)}
            assert text == "Sunny."
        """
    )

    result = agent_pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)

    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("sdk", sorted(SDK_CALLS))
def test_frozen_clock_and_fake_llm_standalone_in_a_fresh_interpreter(sdk: str) -> None:
    code = f"""
import sys

from pytest_agentctx import FakeLLM
from pytest_agentctx.doubles.freeze import FrozenClock

assert "{sdk}" not in sys.modules, "the case needs an SDK not imported yet"
with FrozenClock(), FakeLLM() as fake_llm:
    fake_llm.reply("Sunny.")
{_indented(SDK_CALLS[sdk], 4)}
assert text == "Sunny.", text
print("answered")
"""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )

    assert (done.returncode, done.stdout.strip()) == (0, "answered"), done.stderr[-3000:]
