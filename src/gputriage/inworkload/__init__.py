"""What runs inside the user's workload: step progress (`gputriage.step()`), PyTorch's allocator counters, the
stack sampler and the profiler hook. Standard library only (an import contract says so): these modules are
loaded into someone else's process, where an import costs them time and may clash with their environment."""
