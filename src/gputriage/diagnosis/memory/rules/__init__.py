"""`memory`'s rules, one module per finding, each registered by being here (`gputriage.diagnosis.rule`). At an
out-of-memory error exactly one of the five causes is named, in this precedence (each rule's condition excludes
the ones before it): a request larger than the GPU could ever give; live memory that grew until it failed; other
processes holding what would have let it fit; one request that is most of what the GPU could give; free bytes in
the cache in pieces too small; the steady peak of live tensors at capacity."""
