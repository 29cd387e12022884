"""The numbers the memory rules rest on, each declared once (a rule lists those it uses in its entry)."""

from __future__ import annotations

from gputriage.model.finding import Threshold

J = "judgement"
BUILT = "the five causes planted in examples/oom/ (tests/fixtures/memory/)"

REQUEST_SHARE = Threshold(
    "request_share_min",
    0.5,
    "of what this process could have had (free on the device, and all it held)",
    "one request at least this share of it is the cause itself (a tensor of a whole sequence's logits, a batch), "
    "not the sum of many",
    J + "; " + BUILT,
)
OTHERS_SHARE = Threshold(
    "others_share_min",
    0.1,
    "of the GPU's memory",
    "memory other processes must hold on the GPU to be named the cause (a CUDA context or two is not)",
    J,
)
GROWTH_SHARE = Threshold(
    "growth_share_min",
    0.2,
    "of the live bytes at the end",
    "rise of the live bytes between steps (their troughs) over the time seen, for growth to be the cause",
    J + "; " + BUILT,
)
HALF_SHARE = Threshold(
    "growth_half_share",
    0.25,
    "of the fitted rise",
    "rise each half of the time seen must show (a single step up, a model loaded once, shows in one half only)",
    J,
)
FREED_SHARE = Threshold(
    "growth_freed_share_min",
    1.0,
    "of the troughs' rise",
    "bytes freed over the time seen for a rise to be step after step (steps free their activations; a model "
    "loaded, an optimizer's state created or a forward pass's activations allocate without freeing)",
    J,
)
PEAK_SHARE = Threshold(
    "peak_share_min",
    0.9,
    "of what this process could have had",
    "live tensors and the request together, for the steady peak to be the cause (less: memory held outside "
    "PyTorch's allocator, which the snapshot does not show)",
    J,
)
FRAGMENTATION = Threshold(
    "fragmentation_min",
    0.5,
    "1 - largest free block / free cached bytes",
    "fragmentation from which a cache holding much free memory is named without an error",
    "pytorch#29554's measure; " + J,
)
CACHE_SHARE = Threshold(
    "cache_free_share_min",
    0.25,
    "of the reserved bytes",
    "free bytes in the allocator's cache from which its fragmentation is named without an error",
    J,
)
