"""Environment variables that cost performance when set to a value: the value, and what it does."""

# variable → (value that hurts, what it does)
COSTLY_VARS = {
    "CUDA_LAUNCH_BLOCKING": ("1", "every kernel launch waits for the kernel to finish: no CPU/GPU overlap"),
    "PYTORCH_NO_CUDA_MEMORY_CACHING": ("1", "PyTorch's caching allocator is off: a cudaMalloc/cudaFree per tensor"),
    "TORCH_USE_CUDA_DSA": ("1", "device-side assertions: extra checks in every kernel"),
    "CUDA_DEVICE_MAX_CONNECTIONS": ("1", "one hardware queue: streams serialize (fine only when a framework asks it)"),
    "NCCL_P2P_DISABLE": ("1", "GPU peer-to-peer off: collectives go through host memory"),
    "NCCL_IB_DISABLE": ("1", "InfiniBand off: inter-node collectives fall back to TCP sockets"),
    "NCCL_SHM_DISABLE": ("1", "shared-memory transport off for intra-node collectives"),
    "TORCH_NCCL_BLOCKING_WAIT": ("1", "every collective blocks the host until it completes"),
    "CUBLAS_WORKSPACE_CONFIG": (":16:8", "deterministic cuBLAS with a small workspace: slower GEMMs"),
    "OMP_NUM_THREADS": ("1", "one OpenMP thread for CPU ops (data preprocessing on the CPU runs single-threaded)"),
}
