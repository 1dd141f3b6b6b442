"""``python -m gwtools.sandbox``: the same as ``gwtools sandbox``."""

from gwtools.sandbox.cli import sandbox

sandbox(prog_name="python -m gwtools.sandbox")
