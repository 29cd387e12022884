"""Frozen data shared by every layer: readings, facts, snapshots, findings, probe results.

Import from the submodules (`gputriage.model.finding`, ...): this package imports nothing itself,
so a command pays only for what it uses.
"""
