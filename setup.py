"""The one compiled part: the trace reader's filing of events into columns (src/gputriage/trace/_filing.c).
Optional: an install without a C compiler or Python's headers files them in Python, with the same result.
Everything else is declared in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("gputriage.trace._filing", ["src/gputriage/trace/_filing.c"], optional=True)])
