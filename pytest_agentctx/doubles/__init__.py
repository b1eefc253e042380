"""Test doubles: the fake model and fake tools (``fake_llm``, ``fake_tools``,
``scripted_model``), the fake MCP server (``fake_mcp``), the loopback provider
(``loopback``), the injected ids (``ids``), the frozen wall clock (``freeze``), and their
errors (``errors``)."""
