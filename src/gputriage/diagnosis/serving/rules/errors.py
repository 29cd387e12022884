"""Requests failing under load: from which step, how many, and what each kind of failure says."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.serving.evidence import LOAD, LoadEvidence
from gputriage.diagnosis.serving.steps import ERROR_SHARE, failed, load_name
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording

ERRORS_CRITICAL = Threshold(
    "error_share_critical",
    0.25,
    "of requests",
    "failed requests of a step from which the finding is critical: the server is not serving at that load",
    "judgement",
)

ERROR_CAUSES = {  # what each kind of failure says, first the most frequent
    "http": "The server refused (HTTP 429/503: a cap or an overload) or failed (HTTP 500: often out of memory).",
    "timeout": "Requests did not finish within the client's timeout.",
    "connect": "Connections were refused or reset: the server was down or restarting.",
    "client": "This machine could not open more connections (its file or port limits).",
    "stream": "Streams broke, or carried events that are not JSON objects, or the server did not answer in HTTP.",
    "server": "The server reported errors inside the streams (`error` events): its log says which.",
    "empty": "Requests answered 200 but streamed no text: the model emitted only tokens that decode to nothing "
    "(special or unknown ids: a tokenizer smaller than the model's vocabulary) or the server does not "
    "stream.",
}


def evaluate(ev: LoadEvidence) -> list[Finding]:
    s = next((s for s in ev.asked if failed(s)), None)
    if s is None:
        return []
    share = sum(s.errors.values()) / s.requests
    kinds = sorted(s.errors, key=lambda k: -s.errors[k])
    causes = " ".join(dict.fromkeys(ERROR_CAUSES.get(k.split("_")[0], ERROR_CAUSES["http"]) for k in kinds))
    return [
        RULE.finding(
            {"from": load_name(s), "errors": s.errors, "requests": s.requests},
            severity=Severity.critical if share >= ERRORS_CRITICAL.value else Severity.warn,
            say="failed",
            fill={"share": share, "at": load_name(s), "causes": causes},
        )
    ]


RULE = Rule(
    FindingSpec(
        id="load.errors",
        step=5,
        severity=Severity.warn,
        commands=LOAD,
        thresholds=(ERROR_SHARE, ERRORS_CRITICAL),
        symptom="Requests failed under load",
        cause="The server refused (HTTP 429/503: a cap or an overload), failed (HTTP 500: often out of memory) or did "
        "not answer within the timeout",
        decision="Read the server's log at that load; set the request cap below the failing load and a client "
        "timeout; an out-of-memory error asks for VRAM headroom (fewer sequences, shorter context)",
        condition="failed requests >= {error_share:.0%} of a step's requests (critical from "
        "{error_share_critical:.0%})",
        # the cause: what each kind of failure in the step says (ERROR_CAUSES), the most frequent first
        says={"failed": Wording(symptom="{share:.0%} of requests failed at {at}", cause="{causes}")},
    ),
    evaluate,
)
