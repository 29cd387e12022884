"""The load generator: prompts shaped to a length, arrivals (a concurrency sweep or request rates), the SLO
grammar, the steps driven against an OpenAI-compatible server, and what the server did meanwhile. It measures;
diagnosis.serving judges."""
