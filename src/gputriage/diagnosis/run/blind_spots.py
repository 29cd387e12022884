"""The verdicts a run could not reach: what the GPU's counters, the samples and the trace at hand
cannot see, said in the report rather than left silent.

From `classify.LABEL_NEEDS` (what each label rests on) against what the run had:
- a GPU without GPM (before Hopper, or `--no-gpm`): tensor_cores_idle is out of sight (tensor cores
  cannot be told from CUDA cores); underfilled and memory_bound are told only approximately, from
  the power drawn against the limit and nvidia-smi's memory util;
- no sample of the workload's processes (`watch` without a process): the host-side causes
  (input_starved, launch_bound, sync_bound, host_bound) cannot be told apart;
- comm_bound for a job on several GPUs: from NVLink traffic where the GPUs have NVLink (whether
  computation overlaps it shows only in a trace); without NVLink (PCIe, the network), only in a trace;
- vram_pressure where the workload did not report PyTorch's allocator (not Python, `--no-profile`,
  `watch`): from VRAM use, which cannot tell a pool taken at start from an allocator that churns.
A trace merged into the run (`run --profile`) sees what the counters miss, and clears those.
"""

from __future__ import annotations

from gputriage.diagnosis.run.classify import LABEL_NEEDS
from gputriage.model.bottleneck import HOST_BOUND
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.run import BlindSpot, GpuStatic

WHY = {
    "gpm": "this GPU has no GPM metrics (NVIDIA Hopper and newer have them): tensor-core activity is not counted",
    "workload": "no sample of the workload's processes: a host-side cause cannot be told from another",
    "nvlink": "these GPUs have no NVLink counters: collectives over PCIe or the network show only in a trace",
}
APPROXIMATE = {
    B.underfilled: "from the power drawn against the limit (no SM activity without GPM)",
    B.memory_bound: "from nvidia-smi's memory util (no DRAM bandwidth without GPM)",
}
COMM_APPROXIMATE = "from NVLink traffic: whether computation overlaps the collectives shows only in a trace"
VRAM_APPROXIMATE = (
    "from VRAM use: the workload did not report its allocator (it is not Python, or was sampled "
    "under `--no-profile` or by `watch`), so a full GPU cannot be told from one whose allocator "
    "gives memory back"
)
VRAM_HOW = "`gputriage run -- python ...` loads the hook that reports PyTorch's allocator"
HOW = "`gputriage run --profile auto` profiles where the counters cannot decide"


def blind_spots(
    gpus: dict[int, GpuStatic], workload_sampled: bool, traced: bool, multi_gpu: bool, allocator_reported: bool = True
) -> list[BlindSpot]:
    """What this run could not see (`gpus`: the GPUs the workload used; `allocator_reported`: the workload
    reported PyTorch's caching allocator)."""
    have = {"gpu", "workload"} if workload_sampled else {"gpu"}
    nvlink = bool(gpus) and all(g.nvlink_links for g in gpus.values())
    if nvlink:
        have.add("nvlink")
    if traced:
        have |= {"trace", "gpm", "workload", "nvlink"}  # kernels, dtypes, the host's gaps, collectives
    no_gpm = sorted(i for i, g in gpus.items() if not g.gpm)
    out = []
    for b, needs in LABEL_NEEDS.items():
        missing = [n for n in needs if n not in have and not (n == "gpm" and not no_gpm)]
        if not missing or (b == B.comm_bound and not multi_gpu):
            continue
        out.append(
            BlindSpot(
                bottleneck=b,
                why=WHY[missing[0]],
                gpus=no_gpm if missing[0] == "gpm" else [],
                how=HOW
                if "trace" in missing or "gpm" in missing
                else "`gputriage run -- CMD` samples the workload's processes",
            )
        )
    if no_gpm and not traced:
        out += [
            BlindSpot(bottleneck=b, why=f"approximate: {why}", gpus=no_gpm, how=HOW) for b, why in APPROXIMATE.items()
        ]
    if not allocator_reported and gpus:
        out.append(BlindSpot(bottleneck=B.vram_pressure, why=f"approximate: {VRAM_APPROXIMATE}", gpus=[], how=VRAM_HOW))
    if multi_gpu and nvlink and not traced:
        out.append(BlindSpot(bottleneck=B.comm_bound, why=f"approximate: {COMM_APPROXIMATE}", gpus=[], how=HOW))
    order = list(B)
    return sorted(out, key=lambda s: (s.bottleneck not in HOST_BOUND, order.index(s.bottleneck)))
