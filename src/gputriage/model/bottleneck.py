"""The verdict vocabulary shared by `run` and `trace`."""

from __future__ import annotations

import enum


class Bottleneck(str, enum.Enum):
    input_starved = "input_starved"
    launch_bound = "launch_bound"
    sync_bound = "sync_bound"
    h2d_copy_bound = "h2d_copy_bound"
    memory_bound = "memory_bound"
    compute_bound = "compute_bound"
    tensor_cores_idle = "tensor_cores_idle"
    underfilled = "underfilled"
    throttled = "throttled"
    vram_pressure = "vram_pressure"
    contended = "contended"
    comm_bound = "comm_bound"
    idle = "idle"


_B = Bottleneck
# what to do about each: the seeds' decisions, shared by the sampler's verdict and the trace's
DECISIONS = {
    _B.idle: "Nothing runs on the GPU: check that the work is placed on CUDA and that the job is not blocked",
    _B.contended: "Isolate the job: one job per GPU, MIG, or scheduler constraints; stop the other process",
    _B.vram_pressure: "Leave 5-10% VRAM headroom so the caching allocator stops freeing and re-allocating "
                     "(cudaFree synchronizes): smaller batch or sequence, bucketed shapes, gradient checkpointing, "
                     "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, no torch.cuda.empty_cache() in the loop",
    _B.throttled: "Fix cooling or power delivery (or the lowered power limit); don't tune kernels while clocks drop",
    _B.h2d_copy_bound: "Pin host memory and copy with non_blocking=True (DataLoader(pin_memory=True)); overlap "
                      "copies with compute on a side stream; send fewer bytes (uint8/bf16 on the wire, decode on "
                      "the GPU)",
    _B.input_starved: "Feed the GPU in parallel with it: DataLoader(num_workers>0, pin_memory=True, prefetch_factor), "
                     "pre-tokenized/decoded data, GPU-side augmentation; move CPU tensor work out of the loop",
    _B.launch_bound: "Launch fewer, bigger kernels: CUDA graphs (torch.cuda.graphs) or torch.compile("
                    "mode='reduce-overhead'), larger batches, fused ops",
    _B.sync_bound: "Keep values on the GPU: no .item()/.cpu()/.tolist()/print of CUDA tensors inside the loop; "
                  "accumulate metrics on the GPU and read them every N steps",
    _B.underfilled: "Give each kernel more work: larger batch or sequence, fuse small ops (torch.compile), CUDA "
                   "graphs; watch SM activity, not GPU-Util: the GPU is busy but most SMs have no block to run",
    _B.compute_bound: "Healthy: the GPU computes on its tensor cores. Gains now come from less math (smaller model, "
                     "lower precision such as fp8) or more GPUs",
    _B.memory_bound: "Fuse elementwise chains (torch.compile), keep activations in bf16, avoid materializing "
                    "intermediates",
    _B.tensor_cores_idle: "Run GEMMs on tensor cores: bf16 autocast (torch.autocast('cuda', dtype=torch.bfloat16)) "
                         "or TF32 for fp32 (torch.backends.cuda.matmul.allow_tf32 = True)",
    _B.comm_bound: "Overlap communication with computation (DDP bucket sizes, FSDP prefetch), larger per-GPU batch, "
                  "faster interconnect settings",
}
