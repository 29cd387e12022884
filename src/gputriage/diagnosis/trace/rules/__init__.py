"""The findings of a profiled window (`trace.*`), one module per finding: those of one rank's window read a
`RankEvidence`, those of the job's ranks side by side a `RanksEvidence` (`trace.evidence.reads`)."""
