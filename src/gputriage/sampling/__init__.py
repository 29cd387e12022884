"""Sampling a machine or a workload over time: the sampler, its windows, the session that records a
run, and the run store. Nothing here judges (`diagnosis.run.judge` does)."""
