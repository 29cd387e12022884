"""The allocator's cache held enough free bytes, in no block as large as the request."""

from gputriage.diagnosis.memory.evidence import MEMORY, Evidence, mib, oom_evidence, size
from gputriage.diagnosis.memory.thresholds import CACHE_SHARE, FRAGMENTATION
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def _before(ev: Evidence) -> bool:
    """A cause of an earlier rule explains the error."""
    return ev.never_fits() or ev.grew() or ev.others_in_the_way() or ev.one_huge_request()


def evaluate(ev: Evidence) -> list[Finding]:
    s = ev.state
    if ev.oom:
        if _before(ev) or not ev.cache_in_pieces():
            return []
        say, severity = "oom", Severity.critical
    else:
        frag = s.fragmentation
        if frag is None or frag < FRAGMENTATION.value or s.cached_free_bytes < CACHE_SHARE.value * s.reserved_bytes:
            return []
        say, severity = "cache", Severity.warn
    fill = {
        "free": size(s.cached_free_bytes),
        "largest": size(s.largest_free_bytes),
        "requested": size(ev.requested),
        "fragmentation": s.fragmentation or 0.0,
        "allocated_share": s.allocated_share or 0.0,
        "where": ev.where(),
    }
    evidence = {
        **oom_evidence(ev),
        "cached_free_mib": mib(s.cached_free_bytes),
        "largest_free_mib": mib(s.largest_free_bytes),
        "fragmentation": s.fragmentation,
        "allocated_over_reserved": s.allocated_share,
        "segments": s.segments,
        "expandable_segments": s.expandable_segments,
    }
    return [RULE.finding(evidence, subject=f"gpu.{s.device}", severity=severity, say=say, fill=fill)]


RULE = Rule(
    FindingSpec(
        id="memory.fragmented",
        step=3,
        severity=Severity.critical,
        commands=MEMORY,
        needs=("allocator snapshot",),
        symptom="The allocator's cache held the memory, in pieces too small",
        cause="PyTorch's caching allocator keeps the blocks it served and splits them for smaller requests; tensors "
        "of many different sizes (varying sequence lengths, dynamic batches) leave free gaps between live blocks "
        "that no large request fits",
        decision="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow in place, no gaps between them); "
        "fewer distinct sizes: pad or bucket sequence lengths, fixed batch sizes; allocate the largest tensors first "
        "and keep them (preallocated buffers)",
        condition="at an out-of-memory error, the free bytes in the allocator's cache cover what was missing but its "
        "largest free block is smaller than the request; without one, fragmentation (1 - largest free block / free "
        "cached bytes) >= {fragmentation_min:.0%} with >= {cache_free_share_min:.0%} of the reserved bytes free",
        thresholds=(FRAGMENTATION, CACHE_SHARE),
        says={
            "oom": Wording(
                symptom="{free} lay free in the allocator's cache, but its largest block was {largest}, smaller than "
                "the {requested} asked at {where} (fragmentation {fragmentation:.0%}, allocated / reserved "
                "{allocated_share:.0%})",
            ),
            "cache": Wording(
                symptom="{free} lies free in the allocator's cache in pieces (largest {largest}; fragmentation "
                "{fragmentation:.0%}, allocated / reserved {allocated_share:.0%})",
                cause="Blocks of many sizes split the cache's segments: a large request may not fit even with this "
                "much free, and the allocator then frees its cache and retries (a stall) or fails",
            ),
        },
    ),
    evaluate,
)
