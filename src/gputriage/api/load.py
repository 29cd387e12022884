"""`load URL`: an OpenAI-compatible endpoint under a concurrency sweep or request-rate runs — latency
against throughput, the knee, what the GPUs and the server did, and why latency rises."""

from __future__ import annotations

import json
import random
import re
import socket
import time
from pathlib import Path
from typing import Callable, Optional, Sequence
from urllib.parse import urlparse

from gputriage.api._common import GputriageError, UsageError, keep_report, open_store, stored_report, stored_row
from gputriage.backends.openai_stream import RequestRecord
from gputriage.model.load import LoadMeta, LoadReport, Slo

# common English words: about one token each for most tokenizers; the warm-up measures it on the server
WORDS = tuple((  # noqa: SIM905 - a paragraph reads better than 200 quoted words
    "the of and to in is was for on are with as his they be at one have this from or had by word but what "
    "some we can out other were all there when up use your how said an each she which do their time if "
    "will way about many then them write would like so these her long make thing see him two has look "
    "more day could go come did number sound no most people my over know water than call first who may "
    "down side been now find any new work part take get place made live where after back little only "
    "round man year came show every good me give our under name very through just form sentence great "
    "think say help low line differ turn cause much mean before move right boy old too same tell does set "
    "three want air well also play small end put home read hand port large spell add even land here must "
    "big high such follow act why ask men change went light kind off need house picture try us again "
    "animal point mother world near build self earth"
).split())
SLO_KEYS = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2e": "e2e_ms"}


def parse_slo(text: str, percentile: int = 90) -> Slo:
    """`ttft=500ms,tpot=50ms` (ms or s) into an Slo."""
    slo = Slo(percentile=percentile)
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = re.fullmatch(r"(\w+)\s*[=<]\s*([\d.]+)\s*(ms|s)?", part)
        if m is None or m.group(1) not in SLO_KEYS:
            raise UsageError(f"--slo: {part!r} is not NAME=VALUE with NAME one of {', '.join(SLO_KEYS)} (e.g. "
                             "ttft=500ms,tpot=50ms)")
        value = float(m.group(2)) * (1000.0 if m.group(3) == "s" else 1.0)
        setattr(slo, SLO_KEYS[m.group(1)], value)
    if percentile not in (50, 90, 99):
        raise UsageError("--slo-percentile: 50, 90 or 99")
    return slo


def sweep(max_concurrency: int) -> list[int]:
    """1, 2, 4, ... up to the cap (the cap itself last)."""
    out, c = [], 1
    while c < max_concurrency:
        out.append(c)
        c *= 2
    return out + [max_concurrency]


class Prompts:
    """Synthetic prompts of about `input_tokens` (normal spread), unique prefixes (no prefix-cache hits), a
    share of long ones; or the prompts of a JSONL file (`{"prompt": ..., "max_tokens": ...}`), in turn."""

    def __init__(self, input_tokens: int, output_tokens: int, spread: float = 0.0, long_share: float = 0.0,
                 long_factor: float = 8.0, file: Optional[Path] = None, seed: int = 0) -> None:
        self.input_tokens, self.output_tokens, self.spread = input_tokens, output_tokens, spread
        self.long_share, self.long_factor = long_share, long_factor
        self.tokens_per_word = 1.0
        self.words_sent = 0  # words in the prompts made before `calibrate` (the warm-up's)
        self.calibrated = False
        self.rng = random.Random(seed)
        self.rows: list[tuple[str, int]] = []
        self.next_row = 0
        if file is not None:
            self.rows = _read_prompts(file, output_tokens)

    def __call__(self, long_factor: Optional[float] = None) -> tuple[str, int, bool]:
        if self.rows:
            text, out = self.rows[self.next_row % len(self.rows)]
            self.next_row += 1
            return text, out, False
        long = self.rng.random() < self.long_share
        tokens = max(1.0, self.rng.gauss(self.input_tokens, self.spread * self.input_tokens))
        if long:
            tokens *= self.long_factor if long_factor is None else long_factor
        words = max(1, round(tokens / self.tokens_per_word))
        if not self.calibrated:
            self.words_sent += words
        return " ".join(self.rng.choice(WORDS) for _ in range(words)), self.output_tokens, long

    def control(self) -> tuple[str, int, bool]:
        """A prompt of the same mix with the long ones at the normal length (still flagged long)."""
        return self(long_factor=1.0)

    def calibrate(self, records: list[RequestRecord]) -> None:
        """The server's count of the prompts made so far (every one of them answered with its usage) sets
        tokens per word for the ones after."""
        counted = [r.input_tokens for r in records]
        if not self.rows and self.words_sent and counted and all(counted):
            self.tokens_per_word = sum(c for c in counted if c) / self.words_sent
        self.calibrated = True


def _read_prompts(file: Path, output_tokens: int) -> list[tuple[str, int]]:
    rows = []
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise GputriageError(f"{file}: {exc.strerror or exc}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            rows.append((str(row["prompt"]), int(row.get("max_tokens", output_tokens))))
        except (ValueError, KeyError, TypeError):
            raise GputriageError(f"{file}:{n}: not a JSON object with a \"prompt\"") from None
    if not rows:
        raise GputriageError(f"{file}: no prompts")
    return rows


def _base(url: str) -> str:
    u = url.rstrip("/")
    if not re.match(r"https?://", u):
        raise UsageError(f"{url!r}: give the server's URL, e.g. http://localhost:8000")
    return re.sub(r"/v1$", "", u)


def _model(base: str) -> str:
    from gputriage.backends.openai_stream import get_json

    try:
        data = get_json(base + "/v1/models")
        return str(data["data"][0]["id"])
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise GputriageError(f"{base}/v1/models: cannot read the served model ({exc}); give it with --model") from None


def _local_pid(base: str) -> Optional[int]:
    from gputriage.backends.server_process import listening_pid

    u = urlparse(base)
    if u.hostname not in ("localhost", "127.0.0.1", "::1", "0.0.0.0", socket.gethostname()):
        return None
    return listening_pid(u.port or (443 if u.scheme == "https" else 80))


def load(url: str, *, concurrency: Sequence[int] = (), max_concurrency: int = 32, rates: Sequence[float] = (),
         burstiness: float = 1.0, requests_per_step: int = 64, seconds_per_step: float = 60.0, warmup: int = 2,
         input_tokens: int = 256, output_tokens: int = 128, spread: float = 0.0, long_prompt_share: float = 0.0,
         long_prompt_factor: float = 8.0, long_prompt_control: bool = True, prompts_file: str | Path | None = None,
         chat: bool = False, model: str | None = None, slo: Slo | None = None, timeout_s: float = 120.0,
         ignore_eos: bool = False, tokenizer: str | Path | None = None, metrics: bool = True,
         sample_gpus: bool = True, weight_bytes: float | None = None,
         store: str | Path | bool | None = None, progress: Callable[[str], None] = lambda _s: None) -> LoadReport:
    """Load an OpenAI-compatible server step by step and judge it. `concurrency` (default 1, 2, 4, ... up to
    `max_concurrency`) or `rates` (requests/s, gamma-distributed gaps: `burstiness` 1 is Poisson, lower is
    burstier); every step bounded by `requests_per_step` and `seconds_per_step`; `warmup` requests first, not
    counted. Token counts are the server's `usage`. The GPUs here are sampled, the server's /metrics scraped.
    `tokenizer` (a local tokenizer.json or a folder holding one) counts the tokens a server's usage lacks.
    With long prompts in the mix, each step runs again with every prompt at the normal length (its control,
    unless `long_prompt_control` is off): what the long prompts cost the others is measured side by side."""
    from gputriage.diagnosis.serving.findings import findings
    from gputriage.diagnosis.serving.stats import knee, summarize
    from gputriage.model.version import __version__
    from gputriage.probes.load import LoadPlan, ServerWatch, drive

    try:
        import aiohttp  # noqa: F401
    except ImportError:
        raise GputriageError("`gputriage load` needs aiohttp: pip install 'gputriage[load]'") from None
    if rates and concurrency:
        raise UsageError("a concurrency sweep or request rates, not both")
    if min(list(concurrency) + [max_concurrency, requests_per_step]) < 1 or seconds_per_step <= 0:
        raise UsageError("concurrency, requests per step and seconds per step must be positive")
    if any(r <= 0 for r in rates) or burstiness <= 0:
        raise UsageError("request rates and burstiness must be positive")
    count = _counter(tokenizer)
    base = _base(url)
    endpoint = "/v1/chat/completions" if chat else "/v1/completions"
    served = model or _model(base)
    prompts = Prompts(input_tokens, output_tokens, spread, long_prompt_share, long_prompt_factor,
                      Path(prompts_file) if prompts_file else None)
    steps_c = [] if rates else (list(concurrency) or sweep(max_concurrency))
    plan = LoadPlan(url=base + endpoint, model=served, endpoint=endpoint, prompts=prompts, concurrencies=steps_c,
                    rates=list(rates), burstiness=burstiness, requests_per_step=requests_per_step,
                    seconds_per_step=seconds_per_step, warmup=warmup, timeout_s=timeout_s, ignore_eos=ignore_eos,
                    control=prompts.control if long_prompt_control and long_prompt_share and long_prompt_factor != 1
                    and not prompts.rows else None, keep_text=count is not None)
    pid = _local_pid(base)
    meta = LoadMeta(url=base, endpoint=endpoint, model=served, shape="rate" if rates else "sweep",
                    burstiness=burstiness if rates else None, input_tokens=None if prompts.rows else input_tokens,
                    output_tokens=output_tokens, long_prompt_share=long_prompt_share or None,
                    long_prompt_factor=long_prompt_factor if long_prompt_share else None,
                    prompts_file=str(prompts_file) if prompts_file else None, requests_per_step=requests_per_step,
                    seconds_per_step=seconds_per_step, warmup_requests=warmup, timeout_s=timeout_s, slo=slo,
                    hostname=socket.gethostname(), gputriage=__version__, local_server=pid is not None)
    report = LoadReport(meta=meta, started_s=time.time())
    sampler, totals = _start_sampler(len(steps_c or rates) * seconds_per_step) if sample_gpus else (None, {})
    if sampler is not None:
        meta.gpu_names = sampler[1]
    watch = ServerWatch(_metrics_url(base, report) if metrics else None, pid)
    watch.start()
    unix_offset = time.time() - time.perf_counter()
    load_t0 = time.perf_counter()
    try:
        raw = drive(plan, progress, lambda warm: prompts.calibrate(_fill_counts(warm, count)))
        for r in raw:
            _fill_counts(r.records, count)
    finally:
        watch.stop()
        samples = list(sampler[0].recent) if sampler is not None else []
        if sampler is not None:
            sampler[0].stop()
    report.steps = [summarize(r, load_t0=load_t0, unix_offset=unix_offset, slo=slo, gpu_samples=samples,
                              gpu_totals=totals, server=watch.samples, server_pid=pid,
                              thread_names=watch.thread_names) for r in raw]
    if watch.metrics_error and metrics:
        report.notes.append(f"the server's metrics could not be read: {watch.metrics_error}")
    if not any(s.gpus for s in report.steps):
        report.notes.append("no GPU sampled here: the server's GPUs are not in this report (run `gputriage load` on "
                            "the server's machine to see them)")
    report.knee = knee(report.steps, slo)
    report.findings = findings(report.steps, _bandwidth_gbs(store, meta.gpu_names) if weight_bytes else None,
                               weight_bytes)
    report.ended_s = time.time()
    keep_report(report, "load", [base], store)
    return report


def _counter(tokenizer: str | Path | None) -> Optional[Callable[[str], int]]:
    from gputriage.backends.tokenizer import TokenizerError, token_counter

    try:
        return token_counter(tokenizer) if tokenizer else None
    except TokenizerError as exc:
        raise GputriageError(str(exc)) from None


def _fill_counts(records: list[RequestRecord], count: Optional[Callable[[str], int]]) -> list[RequestRecord]:
    """The token counts a server's usage lacked, from the user's tokenizer; the kept text is dropped."""
    if count is None:
        return records
    for r in records:
        if r.input_tokens is None and r.prompt:
            r.input_tokens = count(r.prompt)
        if r.output_tokens is None and r.text:
            r.output_tokens, r.tokens_from = count("".join(r.text)), "tokenizer"
        r.text, r.prompt = [], ""
    return records


def _start_sampler(seconds: float) -> tuple[Optional[tuple], dict[int, int]]:
    """The GPUs here, sampled on a thread for the whole load (none when NVML sees none)."""
    from gputriage.backends.host import Host
    from gputriage.backends.nvml import PynvmlBackend
    from gputriage.sampling.sampler import Cadences, Sampler
    from gputriage.sampling.session import gpu_static

    nvml = PynvmlBackend(record=False, bounded=False)
    gpus, info, _system = gpu_static(nvml)
    if not gpus:
        return None, {}
    sampler = Sampler(nvml, Host(), gpus, cadences=Cadences(gpu_s=0.2, ring_s=min(86_400.0, seconds + 900)))
    sampler.start()
    names = [info[i].name or "?" for i in gpus]
    return (sampler, names), {i: info[i].memory_total_bytes or 0 for i in gpus if info[i].memory_total_bytes}


def _metrics_url(base: str, report: LoadReport) -> Optional[str]:
    """The server's Prometheus endpoint when it has one (vLLM, SGLang, TGI serve /metrics)."""
    from gputriage.backends.openai_stream import get_text

    try:
        text = get_text(base + "/metrics")
    except (OSError, ValueError):
        report.notes.append(f"{base}/metrics: none (the server's KV cache and queue are not read)")
        return None
    return base + "/metrics" if "# TYPE" in text or "# HELP" in text else None


def _bandwidth_gbs(store: str | Path | bool | None, gpu_names: list[str]) -> Optional[float]:
    """The GPU's memory bandwidth: what `bench` last measured here (memory.read), else the datasheet's."""
    import sqlite3

    from gputriage.model.specs import by_name

    try:
        db = open_store(store, readonly=True) if store is not False else None
    except GputriageError:
        db = None
    if db is not None:
        try:
            bench = db.last_bench()
        except sqlite3.Error:
            bench = None
        finally:
            db.close()
        rate = next((r.get("value") for r in (bench or {}).get("results", []) if r.get("name") == "memory.read"), None)
        if isinstance(rate, (int, float)):
            return float(rate)
    spec = by_name(gpu_names[0]) if gpu_names else None
    return spec.memory_bw_gbs if spec else None


def show_load(load_id: int, store: str | Path | None = None) -> LoadReport:
    """A load test kept in the store."""
    report: LoadReport = stored_report(load_id, "load", LoadReport, store)
    return report


def stored_kind(record_id: int, store: str | Path | None = None) -> Optional[str]:
    """`run`, `watch`, `monitor`, `load` or `fleet`: what a store id names (None: nothing)."""
    row = stored_row(record_id, store)
    return str(row["kind"]) if row else None
