"""A fleet's nodes judged against each other (`fleet check`)."""
