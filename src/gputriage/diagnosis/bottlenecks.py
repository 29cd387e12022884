"""What each bottleneck means and what to do about it: one wording for the sampler's verdict
(`run.*`) and the trace's (`trace.*`), and the triage step each belongs to."""

from __future__ import annotations

from typing import NamedTuple

from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Severity


class Meaning(NamedTuple):
    step: int
    symptom: str
    cause: str
    decision: str


MEANINGS: dict[B, Meaning] = {
    B.idle: Meaning(
        1,
        "The GPU does nothing",
        "No kernel runs: the work is on the CPU, blocked, or not started",
        "Nothing runs on the GPU: check that the work is placed on CUDA and that the job is not blocked",
    ),
    B.contended: Meaning(
        3,
        "Another process shares the GPU",
        "The GPU time-slices between processes: each gets a share of its time and memory",
        "Isolate the job: one job per GPU, MIG, or scheduler constraints; stop the other process",
    ),
    B.vram_pressure: Meaning(
        3,
        "GPU memory is nearly full while the job runs",
        "Near out-of-memory, the caching allocator frees and re-acquires memory, and cudaFree synchronizes the GPU",
        "Leave a twentieth to a tenth of VRAM free so the caching allocator stops freeing and re-allocating (cudaFree "
        "synchronizes): smaller batch or sequence, bucketed shapes, gradient checkpointing, "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, no torch.cuda.empty_cache() in the loop",
    ),
    B.throttled: Meaning(
        2,
        "The GPU lowers its clocks",
        "A thermal or hardware slowdown, or a power limit lowered below the default, holds the clocks down",
        "Fix cooling or power delivery (or the lowered power limit); don't tune kernels while clocks drop",
    ),
    B.h2d_copy_bound: Meaning(
        2,
        "The GPU waits on host-to-device copies",
        "Data crosses PCIe while the SMs idle: copies from pageable memory, or more bytes than the link carries",
        "Pin host memory and copy with non_blocking=True (DataLoader(pin_memory=True)); overlap copies with compute "
        "on a side stream; send fewer bytes (uint8/bf16 on the wire, decode on the GPU)",
    ),
    B.input_starved: Meaning(
        4,
        "The GPU waits for its input",
        "The host does not produce batches as fast as the GPU consumes them: loading, decoding, augmentation or "
        "other host work between steps",
        "Feed the GPU in parallel with it: DataLoader(num_workers>0, pin_memory=True, prefetch_factor), "
        "pre-tokenized/decoded data, GPU-side augmentation; move CPU tensor work out of the loop",
    ),
    B.launch_bound: Meaning(
        2,
        "The GPU waits for kernel launches",
        "Kernels are shorter than the host's time to launch them: the GPU idles between tiny kernels",
        "Launch fewer, bigger kernels: CUDA graphs (torch.cuda.graphs) or torch.compile(mode='reduce-overhead'), "
        "larger batches, fused ops",
    ),
    B.sync_bound: Meaning(
        2,
        "The GPU idles after host synchronizations",
        "The host waits for the GPU (.item(), .cpu(), printing a CUDA tensor), the queue drains, and the GPU then "
        "waits for the host to issue work again",
        "Keep values on the GPU: no .item()/.cpu()/.tolist()/print of CUDA tensors inside the loop; accumulate "
        "metrics on the GPU and read them every N steps",
    ),
    B.host_bound: Meaning(
        2,
        "The GPU waits while the host computes",
        "The loop computes on the host between GPU steps: framework ops on CPU tensors (an optimizer step on "
        "CPU copies of the parameters), or numpy/Python work on a result copied back from the GPU every step",
        "Keep the computation on the GPU (parameters, optimizer state and statistics as CUDA tensors); read "
        "results back every N steps, not every step, and with pinned non_blocking copies",
    ),
    B.underfilled: Meaning(
        2,
        "The GPU is busy by nvidia-smi, but most SMs are idle",
        "Kernels too small to fill the GPU: each covers a few SMs, so GPU-Util reads 100% while the chip mostly waits",
        "Give each kernel more work: larger batch or sequence, fuse small ops (torch.compile), CUDA graphs; watch "
        "SM activity, not GPU-Util: the GPU is busy but most SMs have no block to run",
    ),
    B.compute_bound: Meaning(
        2,
        "The GPU computes on its tensor cores",
        "Healthy: the SMs are busy with math",
        "Healthy: the GPU computes on its tensor cores. Gains now come from less math (smaller model, lower "
        "precision such as fp8) or more GPUs",
    ),
    B.memory_bound: Meaning(
        2,
        "The GPU waits on device memory",
        "Kernels move more bytes than they compute on: unfused elementwise chains, normalizations, reductions",
        "Fuse elementwise chains (torch.compile), keep activations in bf16, avoid materializing intermediates",
    ),
    B.tensor_cores_idle: Meaning(
        2,
        "The GPU computes on CUDA cores, not tensor cores",
        "Matrix math in full fp32 runs on CUDA cores at a fraction of the tensor-core rate",
        "Run GEMMs on tensor cores: bf16 autocast (torch.autocast('cuda', dtype=torch.bfloat16)) or TF32 for fp32 "
        "(torch.backends.cuda.matmul.allow_tf32 = True)",
    ),
    B.comm_bound: Meaning(
        2,
        "The GPU waits on communication",
        "Collectives that do not overlap computation add directly to step time",
        "Overlap communication with computation (DDP bucket sizes, FSDP prefetch), larger per-GPU batch, faster "
        "interconnect settings",
    ),
}

DECISIONS = {b: m.decision for b, m in MEANINGS.items()}
# input_starved where the workload's processes without a GPU context (its DataLoader workers) are busy
INPUT_WORKERS_DECISION = (
    "The input workers are the bottleneck: add workers up to the free cores, make each sample cheaper (decode "
    "and augment on the GPU — torchvision.transforms.v2 on CUDA tensors, DALI), or store data pre-processed"
)
# h2d_copy_bound where most of the copying runs from the device to the host
D2H_COPY_DECISION = (
    "The copies run from the GPU to the host: read back fewer bytes (reduce or compress on the GPU, bf16/uint8), "
    "less often (every N steps), into pinned buffers with non_blocking=True on a side stream so compute goes on"
)
# host_bound where the workload writes to storage while the GPU waits
HOST_WRITES_DECISION = (
    "Save less often, or off the training loop: copy the state to pinned host memory and write it from another "
    "thread (torch.distributed.checkpoint.async_save), to local NVMe rather than a network filesystem"
)
# host_bound where a thread beside the main thread of a GPU process is busy while the main thread waits
OTHER_THREAD_DECISION = (
    "Another thread of the training process keeps a core busy while the thread that launches the GPU's work "
    "waits: in Python the threads share one interpreter lock (GIL), and each kernel launch needs it. Move that "
    "work to another process (multiprocessing, DataLoader workers), do it less often or in native code that "
    "releases the lock; `py-spy dump --pid PID` shows what each thread runs"
)
# memory_bound where DRAM bandwidth is not the limit: busy SMs whose warps wait on scattered reads
MEMORY_LATENCY = (
    "The SMs wait on scattered memory reads (gathers, embedding lookups, indexing), not on bandwidth: read in "
    "larger contiguous pieces — sort or deduplicate the indices, keep hot rows together, fuse the lookup with what "
    "consumes it — or cache the hot part of the table"
)
# compute_bound where the tensor pipes were counted and mostly idle, or not counted at all (no GPM)
COMPUTE_OFF_TENSOR_CORES = (
    "The SMs are busy, but not with tensor-core math: fp32 math without TF32, elementwise kernels or collectives. "
    "`gputriage run --profile` names the kernels; GEMMs belong on tensor cores (bf16 autocast, TF32)"
)
# compute_bound where the tensor pipes work part of the time and DRAM streams the rest (math pipes otherwise quiet)
COMPUTE_WITH_MEMORY = (
    "The SMs take turns between tensor-core GEMMs and memory-bound kernels (unfused elementwise chains, norms, "
    "dropout): fuse those (torch.compile, fused norms and optimizers) before buying compute. `gputriage run "
    "--profile` says how much of the GPU's time each takes"
)
COMPUTE_TENSOR_UNCOUNTED = (
    "The GPU is busy; it does not count tensor-core activity, so whether its GEMMs run on tensor cores shows only "
    "in a trace (`gputriage run --profile auto`). If they do, gains come from less math or more GPUs"
)

# how loudly a verdict calls for a change: compute_bound is health, idle and memory_bound are information
VERDICT_SEVERITY = {B.compute_bound: Severity.ok, B.idle: Severity.info, B.memory_bound: Severity.info}


def severity_of(b: B) -> Severity:
    return VERDICT_SEVERITY.get(b, Severity.warn)
