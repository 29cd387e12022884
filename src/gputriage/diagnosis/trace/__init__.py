"""A profiled window judged (`trace`, `run --profile`): the verdict of each rank's trace (`verdict`), the findings
of its window and of the ranks side by side (one module of `rules` each), the job's verdict (`ranks`)."""
