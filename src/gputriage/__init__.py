"""gputriage: why is my GPU job slow or unstable, and what to do about it."""

__version__ = "0.1.0"
