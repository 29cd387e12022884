"""The findings of a monitored run (`run`, `watch`, `show`, `monitor()`), one module per catalog id: each holds its
entry, its thresholds and `evaluate(RunEvidence)`, exposed as `RULE` (`diagnosis.rule`). A module here is a rule of
the run by being here. The verdicts (`run.<bottleneck>`) are the label rules' (`diagnosis.run.findings`)."""
