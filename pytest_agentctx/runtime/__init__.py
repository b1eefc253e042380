"""The runtime of the seed designs: agents and their loop, tools, providers, sub-agents,
failure handling, windows, context assembly, retrieval, artifacts, prompts, run persistence,
and their errors.

This package's ``__init__`` stays empty: importing one module of it imports no other.
"""
