"""Test doubles: the fake model and fake tools, the loopback provider, the injected clock and
ids, the frozen wall clock, and their errors.

This package's ``__init__`` stays empty: importing one module of it imports no other.
"""
