"""The version of gputriage (what reports and snapshots record)."""

__version__ = "0.1.0"
