"""`memory`: the kind of an out-of-memory error, and what filled the GPU, judged from the allocator's snapshot; each
rule is a module of `rules/`, found by being there."""
