"""`load`'s rules, one module per finding (`load.*`), each registered by being here (`gputriage.diagnosis.rule`);
each evaluates one sweep (`diagnosis.serving.evidence.LoadEvidence`)."""
