"""An NVML that answers from recorded calls: a snapshot replayed (`check --from`), a recorded machine in the
tests."""

from __future__ import annotations

from typing import Any, Iterable

from gputriage.backends.nvml import GPM_DEFAULT_METRICS, NvmlBackend, call_key, decode, encode
from gputriage.model.reading import Reading, Unavailable


class ReplayNvml(NvmlBackend):
    """Answers from recorded calls. A call that was never recorded is `not_found`."""

    def __init__(self, records: dict[str, Any]) -> None:
        self.source = dict(records)
        self.records: dict[str, Any] = {}

    def _answer(self, key: str) -> Reading:
        if key not in self.source:
            result: Reading = Unavailable("not_found", f"{key} was not recorded")
        else:
            result = decode(self.source[key])
        self.records[key] = encode(result)
        return result

    def init(self) -> Unavailable | None:
        result = self._answer("nvmlInit")
        return result if isinstance(result, Unavailable) else None

    def call(self, fn: str, index: int | None = None, *args: Any) -> Reading:
        return self._answer(call_key(fn, index, args))

    def process_samples(self, index: int, since_us: int) -> Reading:
        """As recorded, whatever the timestamp asked."""
        return self._answer(call_key("nvmlDeviceGetProcessUtilization", index))

    def gpm_sample(self, index: int, into: Any = None) -> Reading:
        recorded = self.source.get(f"gpm/{index}")
        if recorded is None:
            return Unavailable("not_found", f"gpm/{index} was not recorded")
        reading = decode(recorded)
        return reading if isinstance(reading, Unavailable) else ("replay", index)

    def gpm_metrics(
        self, index: int, first: Any, second: Any, metric_ids: Iterable[int] = GPM_DEFAULT_METRICS
    ) -> Reading:
        return self._answer(f"gpm/{index}")
