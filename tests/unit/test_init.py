"""The package's public names: every one importable, loaded on first use."""

from __future__ import annotations

import asyncio
import sys

import pytest

import pytest_agentctx


@pytest.mark.parametrize("name", sorted(pytest_agentctx.__all__))
async def test_every_public_name_is_importable_from_the_package(name: str) -> None:
    assert getattr(pytest_agentctx, name) is not None


async def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        pytest_agentctx.Nope  # noqa: B018


async def test_importing_the_package_loads_none_of_its_heavy_modules() -> None:
    # a fresh interpreter: this one has long imported everything
    code = (
        "import sys, pytest_agentctx\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'httpx2', "
        "'syrupy', 'pytest_agentctx.'))))"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()

    assert (process.returncode, out.decode().strip()) == (
        0,
        "['pytest_agentctx._lazy', 'pytest_agentctx.exceptions']",
    )
