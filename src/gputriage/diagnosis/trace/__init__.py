"""A profiled window judged (`trace`, `run --profile`): the verdict of each rank's trace, its findings, and the
ranks set against each other."""
