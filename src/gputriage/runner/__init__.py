"""The workflows that own a monitored session's resources: `run`'s wrapped workload (`run_session`) with the
profiler gate that watches it (`gate_keeper`) and the traces it reads back (`profiled`). Above diagnosis (the
judge, the profile gate), below the library surface (`api`), which only checks what it is given and calls in."""
