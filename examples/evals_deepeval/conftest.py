"""DeepEval sends usage telemetry unless told not to, reads a ``.env`` file of the working
directory and makes a ``.deepeval`` folder there when it is imported: all three turned off
or moved (its folder to the system's temporary folder) before the test module imports it,
so that the test's only traffic is what the cassette records and the checkout stays clean."""

import os
import tempfile

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
os.environ.setdefault("DEEPEVAL_CACHE_FOLDER", os.path.join(tempfile.gettempdir(), "deepeval"))
