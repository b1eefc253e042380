"""The runtime of the seed designs: agents and their loop, tools, providers, sub-agents and
their delegations, recovery from failed steps, windows, context assembly, retrieval,
artifacts, prompts, run persistence, and their errors.
"""
