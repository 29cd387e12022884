"""The catalog entries of a load test's findings (`load.*`) and the thresholds they rest on, each declared once."""

from __future__ import annotations

from gputriage.diagnosis.serving.collapse import THROUGHPUT_COLLAPSE
from gputriage.diagnosis.serving.shared_cpu import SHARED_CPU
from gputriage.diagnosis.serving.steps import ERROR_SHARE
from gputriage.model.finding import FindingSpec, Severity, Threshold

LOAD = ("load",)


KV_FULL = Threshold(
    "kv_cache_usage_pct",
    95.0,
    "%",
    "KV cache usage the server reported, at or above which new sequences wait or running ones are preempted",
    "judgement",
)


QUEUE_TTFT = Threshold(
    "ttft_growth",
    2.0,
    "x",
    "TTFT growth from one step to the next while TPOT and throughput hold: requests wait before they start",
    "judgement",
)


UNDERFILLED_ACTIVE = Threshold(
    "sm_active_pct",
    40.0,
    "%",
    "SM activity (GPU-Util without GPM) at the lightest load under which the GPU has room for a bigger batch",
    "judgement",
)


SCALING = Threshold(
    "throughput_scaling",
    1.6,
    "x",
    "output tokens/s gained by doubling the load: near 2, each request in flight adds work the GPU had room for",
    "judgement",
)


PREFILL_ITL = Threshold(
    "itl_long_prompt_ratio",
    2.0,
    "x",
    "mean ITL while a long prompt's prefill runs against the rest of the time",
    "judgement",
)


LONG_COST = Threshold(
    "tpot_control_ratio",
    1.5,
    "x",
    "TPOT p50 with the long prompts against the same step with every prompt at the normal length (its control)",
    "judgement",
)


SERVER_THREAD = Threshold("top_thread_pct", 90.0, "% of a core", "the server's busiest thread", "judgement")


VRAM_FULL = Threshold("vram_used_share", 0.95, "of total", "VRAM in use at the peak of the load", "judgement")


CLIENT_CPU = Threshold(
    "client_cpu_pct",
    90.0,
    "% of a core",
    "the generator's event loop: above it, it cannot send and read fast enough to load the server as asked",
    "judgement",
)


DECODE_CEILING = Threshold(
    "decode_ceiling_share",
    0.6,
    "of the ceiling",
    "one sequence's decode tokens/s against the memory bandwidth / weight bytes ceiling",
    "judgement",
)


KV_CACHE_FULL = FindingSpec(
    id="load.kv_cache_full",
    step=3,
    severity=Severity.warn,
    commands=LOAD,
    needs=("server metrics",),
    symptom="The KV cache filled up under load",
    thresholds=(KV_FULL,),
    cause="Concurrent sequences x their context need more KV cache than the server reserved: new requests wait and "
    "running ones are preempted (recomputed or swapped), so latency spikes",
    decision="Cap concurrent sequences (vLLM --max-num-seqs), shorten the maximum context (--max-model-len), "
    "quantize the KV cache (--kv-cache-dtype fp8), or give the cache more GPU memory "
    "(--gpu-memory-utilization); beyond that, another replica",
    condition="KV cache usage >= the threshold, or preemptions counted, in a step",
)


QUEUEING = FindingSpec(
    id="load.queueing",
    step=2,
    severity=Severity.warn,
    commands=LOAD,
    thresholds=(QUEUE_TTFT,),
    symptom="Requests queue before they start: time to first token grows with load, far faster than token speed",
    cause="The server admits a fixed number of sequences (its admission cap, or what its KV cache holds); beyond it "
    "requests wait in its queue, so TTFT grows while decoding speed and throughput stay flat",
    decision="Raise the cap (vLLM --max-num-seqs, TGI --max-concurrent-requests) when the KV cache and VRAM have "
    "headroom; else add replicas behind a load balancer, and set client timeouts at the SLO",
    condition="the server reports requests waiting while running holds at a ceiling; or, from one step to the next "
    "(or from the lightest), TTFT grows >= the threshold, at least twice as fast as TPOT and by at least "
    "half a request's decode time, while output tokens/s grow by under half the load's growth (TPOT measured at "
    "both: a step whose streams arrived whole reads TPOT 0, its TTFT holds the decode, and it is not judged so)",
)


GPU_UNDERFILLED = FindingSpec(
    id="load.gpu_underfilled",
    step=1,
    severity=Severity.info,
    commands=LOAD,
    needs=("gpu",),
    thresholds=(UNDERFILLED_ACTIVE, SCALING),
    symptom="At low concurrency the GPU is mostly idle: throughput doubles with the load",
    cause="Decoding one or a few sequences reads all the weights per token for little math: the GPU waits on "
    "memory and launches, and has room for a bigger batch at almost no latency cost",
    decision="Serve more requests at once (batch more: continuous batching, a higher concurrency per replica) "
    "before adding GPUs; fewer, fuller replicas cost less per token",
    condition="SM activity (GPU-Util) below the threshold at the lightest load, and output tokens/s x >= "
    f"{SCALING.value:g} when the load doubles",
)


PREFILL_INTERFERENCE = FindingSpec(
    id="load.prefill_interference",
    step=2,
    severity=Severity.warn,
    commands=LOAD,
    thresholds=(PREFILL_ITL,),
    symptom="Long prompts stall everyone else's tokens: inter-token latency spikes while they are prefilled",
    cause="A long prompt's prefill runs in the same batch steps as the decoding sequences, which wait for it",
    decision="Enable chunked prefill (vLLM --enable-chunked-prefill, a smaller --max-num-batched-tokens), cap prompt "
    "length, or separate prefill and decode (disaggregated serving)",
    condition="mean ITL while a long prompt is in prefill >= the threshold x the mean ITL otherwise",
)


LONG_PROMPT_COST = FindingSpec(
    id="load.long_prompts_slow_decode",
    step=2,
    severity=Severity.warn,
    commands=LOAD,
    thresholds=(LONG_COST,),
    symptom="Long prompts make every request's tokens slower",
    cause="The long prompts' prefill and their long KV caches share the batch steps with the short requests: "
    "every step does more work, so every request's tokens wait; an attention kernel that pads the batch to "
    "its longest sequence pays for one long prompt on every sequence (the ITL while a long prompt is "
    "prefilled, against the rest, says how much is the prefill)",
    decision="Enable chunked prefill (vLLM --enable-chunked-prefill, a smaller --max-num-batched-tokens), route "
    "long prompts to replicas of their own, cap the context (--max-model-len), and set the SLO by the "
    "prompt mix you serve",
    condition="TPOT p50 of a step with the long prompts >= the threshold x its control's (the same step, every "
    "prompt at the normal length)",
)


SERVER_CPU_BOUND = FindingSpec(
    id="load.server_cpu_bound",
    step=2,
    severity=Severity.warn,
    commands=LOAD,
    needs=("local server",),
    thresholds=(SERVER_THREAD,),
    symptom="One server thread is at 100% while the GPU waits",
    cause="The server's Python side — tokenizer, detokenizer, scheduler, HTTP — cannot keep up: the GPU is fed one "
    "core's worth of work",
    decision="Use the server's multi-process front end or API-server workers, a fast tokenizer, fewer output "
    "chunks (stream intervals), or more replicas per GPU; check that the server has the cores it needs",
    condition="the server's busiest thread >= the threshold while SM activity (GPU-Util) < 60%",
)


VRAM_HEADROOM = FindingSpec(
    id="load.vram_headroom",
    step=3,
    severity=Severity.warn,
    commands=LOAD,
    needs=("gpu",),
    thresholds=(VRAM_FULL,),
    symptom="VRAM has almost no headroom at peak load",
    cause="The weights, the KV cache and activations fill the GPU: a longer prompt or one more sequence is an "
    "out-of-memory error or a preemption",
    decision="Leave headroom (a lower --gpu-memory-utilization, a request cap), quantize weights or KV cache, or "
    "move to a larger GPU; test at the peak prompt lengths you serve",
    condition="VRAM used at the peak of any step >= the threshold of its total",
)


CLIENT_BOUND = FindingSpec(
    id="load.client_bound",
    step=4,
    severity=Severity.warn,
    commands=LOAD,
    thresholds=(CLIENT_CPU,),
    symptom="The load generator itself was the bottleneck",
    cause="gputriage's client ran out of CPU (or connections): it sent and read less than asked, so this step's "
    "figures understate what the server can do",
    decision="Run the load from another machine or with fewer streamed chunks (larger stream intervals); read "
    "this step's latency as a lower bound on load",
    condition="the generator's event loop >= the threshold of a core, or connections this machine could not open",
)


ERRORS = FindingSpec(
    id="load.errors",
    step=5,
    severity=Severity.warn,
    commands=LOAD,
    thresholds=(ERROR_SHARE,),
    symptom="Requests failed under load",
    cause="The server refused (HTTP 429/503: a cap or an overload), failed (HTTP 500: often out of memory) or did not "
    "answer within the timeout",
    decision="Read the server's log at that load; set the request cap below the failing load and a client timeout; "
    "an out-of-memory error asks for VRAM headroom (fewer sequences, shorter context)",
    condition="failed requests >= the threshold of a step's requests",
)


DECODE_MEMORY_BOUND = FindingSpec(
    id="load.decode_memory_bound",
    step=2,
    severity=Severity.info,
    commands=LOAD,
    needs=("model size",),
    thresholds=(DECODE_CEILING,),
    symptom="One sequence decodes near the memory-bandwidth ceiling",
    cause="Each decoded token reads every weight once: tokens/s per sequence cannot exceed the measured memory "
    "bandwidth / the weights' bytes; only batching amortizes the read",
    decision="Batch more sequences per step, quantize the weights (fewer bytes per token), or use speculative "
    "decoding; a faster GPU helps only by its bandwidth",
    condition="1000 / TPOT p50 at the lightest load >= the threshold x (bandwidth / weight bytes)",
)


SPECS = (
    KV_CACHE_FULL,
    QUEUEING,
    GPU_UNDERFILLED,
    PREFILL_INTERFERENCE,
    LONG_PROMPT_COST,
    SERVER_CPU_BOUND,
    VRAM_HEADROOM,
    CLIENT_BOUND,
    ERRORS,
    DECODE_MEMORY_BOUND,
    THROUGHPUT_COLLAPSE,
    SHARED_CPU,
)
