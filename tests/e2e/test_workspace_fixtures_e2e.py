"""End-to-end tests of the ``fake_vector_store`` and ``artifact_store`` fixtures."""

from __future__ import annotations

import pytest


def test_the_fixtures_are_listed_with_their_docs(agent_pytester: pytest.Pytester) -> None:
    result = agent_pytester.runpytest("--fixtures")

    result.stdout.fnmatch_lines(
        [
            "artifact_store -- *pytest_agentctx/plugin/fixtures.py:*",
            '    A :class:`LocalArtifactStore` on ``tmp_path / "workspace"``*',
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "fake_vector_store -- *pytest_agentctx/plugin/fixtures.py:*",
            "    An empty in-memory vector store with deterministic scores*",
        ]
    )


def test_fake_vector_store_is_empty_and_seeded_by_the_test(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(
        """
        from pytest_agentctx import Document, InMemoryVectorStore

        async def test_search(fake_vector_store):
            assert isinstance(fake_vector_store, InMemoryVectorStore)
            assert fake_vector_store.collections == []
            fake_vector_store.add("kb", [Document("refunds", "Refunds take five days."),
                                         Document("shipping", "Shipping takes two days.")])

            results = await fake_vector_store.search("kb", "refunds", top_k=1)

            assert [r.source_id for r in results] == ["refunds"]

        async def test_each_test_gets_a_new_store(fake_vector_store):
            assert fake_vector_store.collections == []
        """
    )

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=2)


def test_artifact_store_lives_in_the_test_temporary_directory(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(
        """
        import pytest
        from pytest_agentctx import ArtifactPathError, LocalArtifactStore

        async def test_workspace(artifact_store, tmp_path):
            assert isinstance(artifact_store, LocalArtifactStore)
            assert artifact_store.root == tmp_path / "workspace"
            artifact_store.write("notes/a.md", "hello")
            assert (tmp_path / "workspace" / "notes" / "a.md").read_text() == "hello"

        async def test_escapes_are_refused(artifact_store):
            with pytest.raises(ArtifactPathError):
                artifact_store.write("../escape.md", "x")
        """
    )

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=2)


def test_a_failing_escape_check_is_reported_with_its_message(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(
        """
        async def test_escape(artifact_store):
            artifact_store.write("/etc/x", "x")
        """
    )

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*ArtifactPathError: Artifact path '/etc/x' is refused: it is absolute*"]
    )


def test_agent_runtime_uses_the_fixtures_the_test_asks_for(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(
        """
        async def test_with(agent_runtime, fake_vector_store, artifact_store):
            assert agent_runtime.vector_store is fake_vector_store
            assert agent_runtime.artifacts is artifact_store

        async def test_without(agent_runtime):
            assert (agent_runtime.vector_store, agent_runtime.artifacts) == (None, None)
        """
    )

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=2)


def test_an_agent_writes_an_artifact_with_the_built_in_tool(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(
        """
        from pytest_agentctx import ARTIFACT_TOOLS, Agent

        researcher = Agent(name="researcher", model="openai:gpt-4o-mini", tools=ARTIFACT_TOOLS)

        async def test_write(agent_runtime, fake_llm, artifact_store):
            fake_llm.reply_tool_call(
                "write_artifact", path="findings.md", content="Refunds take five days."
            ).reply("Saved findings.md")

            result = await agent_runtime.run(
                researcher, "Research refunds", deps={"artifacts": artifact_store}
            )

            assert artifact_store.read("findings.md") == "Refunds take five days."
            match result.context.iterations[0].messages[-1].content:
                case str(text) if text.startswith("Saved findings.md (23 bytes, sha256 "):
                    pass
                case other:
                    raise AssertionError(other)
            assert [r.path for r in artifact_store.changes().created] == ["findings.md"]
        """
    )

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)
