"""The numbers the memory rules rest on, each declared once (a rule lists those it uses in its entry)."""

from __future__ import annotations

from gputriage.model.finding import Threshold

J = "judgement"
BUILT = "the five causes planted in tests/fixtures/memory (built) and examples/oom (recorded on a GPU)"

REQUEST_SHARE = Threshold(
    "request_share_min",
    0.5,
    "share",
    "of what this process could have had (free on the device and all it held), one request at least this share is "
    "the cause itself (a tensor of a whole sequence's logits, a batch), not the sum of many",
    J + "; " + BUILT,
)
OTHERS_SHARE = Threshold(
    "others_share_min",
    0.1,
    "share",
    "of the GPU's memory, what other processes must hold to be named the cause (a CUDA context or two is not)",
    J,
)
GROWTH_SHARE = Threshold(
    "growth_share_min",
    0.1,
    "share",
    "of the live bytes at the end, how much the live bytes between steps (their troughs) must rise over the time "
    "seen for growth to be the cause",
    J + "; " + BUILT,
)
HALF_SHARE = Threshold(
    "growth_half_share",
    0.25,
    "share",
    "of the rise fitted over the time seen, what each half of it must show (a single step up, a model loaded once, "
    "shows in one half only)",
    J,
)
FREED_SHARE = Threshold(
    "growth_freed_share_min",
    1.0,
    "share",
    "of the troughs' rise, the bytes freed meanwhile for the rise to be step after step (steps free their "
    "activations; a model loaded, an optimizer's state created or one forward pass's activations allocate without "
    "freeing)",
    J,
)
PEAK_SHARE = Threshold(
    "peak_share_min",
    0.9,
    "share",
    "of what this process could have had, what live tensors and the request together must make for the steady peak "
    "to be the cause (less: memory held outside PyTorch's allocator, which the snapshot does not show)",
    J,
)
FRAGMENTATION = Threshold(
    "fragmentation_min",
    0.5,
    "share",
    "fragmentation (1 - largest free block / free cached bytes) from which a cache holding much free memory is named "
    "without an error",
    "pytorch#29554's measure; " + J,
)
CACHE_SHARE = Threshold(
    "cache_free_share_min",
    0.25,
    "share",
    "of the reserved bytes, the free bytes in the allocator's cache from which its fragmentation is named without "
    "an error",
    J,
)
