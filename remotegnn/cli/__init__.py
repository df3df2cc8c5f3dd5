"""The `remotegnn` command line: one module per command, all registered on ``app.app``."""
