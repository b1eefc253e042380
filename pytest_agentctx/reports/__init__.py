"""Reports: run figures (stats), budgets, report records (JSON/JUnit), the terminal summary,
the HTML report, the gate, and their errors.

This package's ``__init__`` stays empty: importing one module of it imports no other.
"""
