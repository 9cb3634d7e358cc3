"""Subcommands of the `hrl` CLI, one module each (see `hrl.cli`)."""
