"""Active, bounded measurements."""
