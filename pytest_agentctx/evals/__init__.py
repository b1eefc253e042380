"""Evaluations: judges and simulated users, their model calls made with a role."""
