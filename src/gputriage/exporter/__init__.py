"""The exporter's server: a Prometheus endpoint of the sampler's readings under dcgm-exporter's names, each
GPU's bottleneck, the processes on it and the findings of a periodic check (`gputriage exporter`)."""

from gputriage.exporter.server import DEFAULT_PORT, Exporter, ExporterError

__all__ = ["DEFAULT_PORT", "Exporter", "ExporterError"]
