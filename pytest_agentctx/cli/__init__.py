"""The ``pytest-agentctx`` command (and ``python -m pytest_agentctx``): what runs outside a
pytest session, on the files sessions leave behind. :mod:`.main` is its entry point."""
