"""A monitored run judged (`run`, `watch`, `show`, `monitor()`): each window's label, each GPU's verdict over the
steady state, the run's findings, the profiler gate, throughput, baselines and cost."""
