"""Streaming parse of PyTorch profiler (Kineto) traces into columns; one module per analysis."""
