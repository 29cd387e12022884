"""The only code that touches hardware, the OS or subprocesses."""
