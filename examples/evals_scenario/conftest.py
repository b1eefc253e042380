"""LiteLLM (which langwatch-scenario calls its models through) fetches its model price
table from the internet when it is imported: told to use the copy it ships instead, before
the test module imports it, so that importing it makes no request."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
