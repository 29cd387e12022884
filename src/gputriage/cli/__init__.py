"""Thin command-line layer: one module per subcommand."""
