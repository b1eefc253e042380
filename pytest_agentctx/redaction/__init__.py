"""Redaction: the one redactor that every file the plugin writes passes (cassettes,
snapshots, reports, failure text), and the active redactor of the running test.

A base package: every layer may import it, and it imports no layer.
"""
