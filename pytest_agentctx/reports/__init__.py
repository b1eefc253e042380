"""Reports: prices and run figures, each test's runs, budgets, each test's record and its
entries, the session's JSON report and JUnit properties, the terminal table and summary,
the HTML report, the gate, and their errors.

This package's ``__init__`` stays empty: importing one module of it imports no other.
"""
