"""Judgement: the catalog of every finding, `check`'s rules, and the judges that turn a run's
windows, a trace's anatomy, a bench's measurements and budgets into verdicts and findings."""
