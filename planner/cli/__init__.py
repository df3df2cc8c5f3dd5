"""The `planner` command line (typer + rich)."""
