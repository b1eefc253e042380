"""Model traffic: transport interception for every HTTP client, cassettes, wire-format codecs,
capture of contexts from traffic, and redaction.

This package's ``__init__`` stays empty: importing one module of it imports no other.
"""
