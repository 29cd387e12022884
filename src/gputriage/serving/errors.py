"""What the load generator refuses: a bad option (the command line's fault) or a bad input (a prompts file, a
server that is not there or not one)."""

from __future__ import annotations


class LoadInputError(Exception):
    """An input cannot be used: a prompts file, a server that does not answer or is not OpenAI-compatible."""


class LoadOptionError(LoadInputError):
    """The options ask for something that cannot be (a rate that is not a number, an SLO that is not one)."""
