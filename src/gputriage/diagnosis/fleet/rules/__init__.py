"""`fleet`'s rules, one module per finding (`fleet.*`), each registered by being here (`gputriage.diagnosis.rule`);
each sets the nodes of one fleet check against each other (`diagnosis.fleet.evidence.FleetEvidence`)."""
