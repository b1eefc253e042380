"""Model traffic: transport interception for every HTTP client, cassettes, wire-format codecs,
capture of contexts from traffic, and their errors (the cassette's redaction of stored
bodies is in ``cassettes.redact``, over the base ``redaction`` package).

This package's ``__init__`` stays empty: importing one module of it imports no other.
"""
