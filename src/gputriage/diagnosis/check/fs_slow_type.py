"""Working directory on overlayfs or a network filesystem (playbook mistakes 5 and 7)."""

from gputriage.diagnosis.check.base import Evidence, Rule
from gputriage.model.finding import Finding, Severity

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
                Severity.info,
                {
                    "host.fs.cwd.fstype": fstype,
                    "kind": SLOW_TYPES[fstype],
                    "host.fs.cwd.mountpoint": ev.get("host.fs.cwd.mountpoint"),
                },
                subject="host",
            )
        ]
    return []


RULE = Rule(
    id="fs.slow_type",
    step=4,
    severity=Severity.info,
    symptom="The working directory is on an overlay or network filesystem",
    cause="Heavy dataset reads through overlayfs or a network filesystem add latency and metadata cost per file",
    decision="Keep datasets and checkpoints on a local volume (bind mount / local NVMe); measure with "
    "`gputriage bench --disk PATH`",
    condition="fstype in: " + ", ".join(sorted(SLOW_TYPES)),
    evaluate=evaluate,
)
