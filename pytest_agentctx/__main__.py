"""``python -m pytest_agentctx``: the ``pytest-agentctx`` command (see docs/cli.md)."""

from pytest_agentctx.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
