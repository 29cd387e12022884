"""Working directory on overlayfs or a network filesystem (playbook mistakes 5 and 7)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity

SLOW_TYPES = {
    "overlay": "overlayfs (container layer)",
    "nfs": "NFS",
    "nfs4": "NFS",
    "cifs": "SMB/CIFS",
    "fuse.sshfs": "sshfs",
    "fuse.s3fs": "s3fs",
    "fuse.gcsfuse": "gcsfuse",
    "9p": "9p (VM share)",
    "fuse.mountpoint-s3": "Mountpoint for S3",
    "virtiofs": "virtiofs",
}


def evaluate(ev: Evidence) -> list[Finding]:
    fstype = ev.get("host.fs.cwd.fstype")
    if fstype in SLOW_TYPES:
        return [
            RULE.finding(
                {
                    "host.fs.cwd.fstype": fstype,
                    "kind": SLOW_TYPES[fstype],
                    "host.fs.cwd.mountpoint": ev.get("host.fs.cwd.mountpoint"),
                },
                severity=Severity.info,
                subject="host",
            )
        ]
    return []


RULE = Rule(
    FindingSpec(
        id="fs.slow_type",
        step=4,
        severity=Severity.info,
        symptom="The working directory is on an overlay or network filesystem",
        cause="Heavy dataset reads through overlayfs or a network filesystem add latency and metadata cost per file",
        decision="Keep datasets and checkpoints on a local volume (bind mount / local NVMe); measure with "
        "`gputriage bench --disk PATH`",
        commands=CHECK,
        condition="fstype in: " + ", ".join(sorted(SLOW_TYPES)),
    ),
    evaluate,
)
