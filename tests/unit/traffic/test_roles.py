"""Unit tests of pytest_agentctx.traffic.roles: the role of the model calls made now."""

from __future__ import annotations

import asyncio
import threading

import pytest

from pytest_agentctx.traffic.roles import ROLES, current_role, model_role


def test_the_role_is_the_agents_outside_any_model_role():
    assert current_role() == "agent"


def test_calls_made_inside_model_role_have_its_role():
    with model_role("judge"):
        assert current_role() == "judge"


def test_the_role_is_restored_when_model_role_ends():
    with model_role("judge"):
        with model_role("user_sim"):
            pass
        assert current_role() == "judge"

    assert current_role() == "agent"


def test_the_role_is_restored_when_the_block_raises():
    with pytest.raises(RuntimeError), model_role("judge"):
        raise RuntimeError("boom")

    assert current_role() == "agent"


async def test_tasks_created_inside_model_role_have_its_role():
    async def role() -> str:
        return current_role()

    with model_role("user_sim"):
        task = asyncio.create_task(role())

    assert await task == "user_sim"


def test_a_thread_started_inside_model_role_makes_the_agents_calls():
    seen: list[str] = []
    with model_role("judge"):
        thread = threading.Thread(target=lambda: seen.append(current_role()))
        thread.start()
        thread.join()

    assert seen == ["agent"]


def test_an_unknown_role_is_refused_naming_the_roles():
    with pytest.raises(ValueError, match=r"'grader'.*agent, judge, user_sim"), model_role("grader"):
        pass


def test_the_roles_are_the_agent_the_judge_and_the_simulated_user():
    assert ROLES == ("agent", "judge", "user_sim")
