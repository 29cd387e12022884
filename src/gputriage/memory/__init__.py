"""PyTorch's CUDA caching allocator, read from its snapshots (`torch.cuda.memory._snapshot()`, the pickle
memory_viz reads): a safe reader (plain containers and numbers only), the live bytes by Python line, how fragmented
the cache is, the live memory over the recorded history, and the out-of-memory error it raised."""
