"""The package's public names: every one importable, loaded on first use."""

from __future__ import annotations

import asyncio
import sys

import pytest

import pytest_agentctx


@pytest.mark.parametrize("name", sorted(pytest_agentctx.__all__))
def test_every_public_name_is_importable_from_the_package(name: str) -> None:
    assert getattr(pytest_agentctx, name) is not None


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        pytest_agentctx.Nope  # type: ignore[attr-defined]  # noqa: B018


async def test_importing_the_package_loads_none_of_its_heavy_modules() -> None:
    # a fresh interpreter: this one has long imported everything
    code = (
        "import sys, pytest_agentctx\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'httpx2', "
        "'syrupy', 'aiohttp', 'pytest_agentctx.'))))"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()

    assert (process.returncode, out.decode().strip()) == (
        0,
        "['pytest_agentctx._lazy', 'pytest_agentctx._public', 'pytest_agentctx.exceptions']",
    )


def test_a_public_name_follows_its_module_when_the_module_is_imported_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # pytester's in-process runs drop the modules a run imported; the next run imports them
    # anew, and the package must then give the new classes, not those of the first run
    module = "pytest_agentctx.context._seq"
    first = pytest_agentctx.FrozenDict
    monkeypatch.delitem(sys.modules, module)

    again = pytest_agentctx.FrozenDict

    assert (again is first, again is sys.modules[module].FrozenDict) == (False, True)


def test_a_cassettes_name_follows_its_module_when_the_module_is_imported_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_agentctx.traffic import cassettes

    module = "pytest_agentctx.traffic.cassettes.defaults"
    first = cassettes.RecordMode
    monkeypatch.delitem(sys.modules, module)

    again = cassettes.RecordMode

    assert (again is first, again is sys.modules[module].RecordMode) == (False, True)
