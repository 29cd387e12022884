"""Sampling a machine or a workload over time, the run store, and the regime classifier."""
