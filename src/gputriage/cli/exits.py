"""Exit codes, documented in docs/reference.md."""

OK = 0  # ran; no finding at or above --fail-on
FINDINGS = 1  # ran; a finding at or above --fail-on (or the wrapped command's own non-zero code for `run`)
USAGE = 2  # bad command line
BAD_INPUT = 3  # an input file is missing, unreadable, corrupt or not of the expected kind
INTERNAL = 4  # gputriage itself failed (a bug: please report it with --debug output)
INTERRUPTED = 130  # Ctrl-C (SIGINT)
TERMINATED = 143  # SIGTERM (`load` prints and keeps the steps that finished first)
