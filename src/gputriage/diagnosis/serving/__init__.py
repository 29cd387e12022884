"""A served model under load judged (`load`): each step's figures from its requests, and why latency rises."""
