"""`check`'s rules, one module per finding, each registered by being here (`gputriage.diagnosis.rule`)."""
