"""`hrl` command line: a dispatcher over the modules of `hrl.commands`.

Each subcommand is one module `hrl/commands/<name>.py` defining

    HELP = "one line for `hrl --help`"
    def add_arguments(parser: argparse.ArgumentParser) -> None: ...
    def run(args: argparse.Namespace) -> int: ...           # the exit status

Adding a subcommand (`hrl profile`, `hrl map`, `hrl report`) means adding one such module;
nothing here changes.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import hrl.commands
from hrl.commands._errors import error_line
from hrl.config import ConfigError


def _command_modules() -> list[str]:
    return sorted(
        m.name for m in pkgutil.iter_modules(hrl.commands.__path__) if not m.name.startswith("_")
    )


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hrl",
        description="Deep RL with a prioritized replay buffer, mapped onto CPUs, GPUs and FPGAs.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _command_modules():
        module = importlib.import_module(f"hrl.commands.{name}")
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand. A user's mistake or a Ctrl-C is one line on stderr and an exit
    status, never a traceback: 2 for a bad config or path (as argparse for bad arguments),
    1 for a file that cannot be read or written, 130 for Ctrl-C (before a subcommand installs
    its own handling, e.g. while `hrl train` compiles)."""
    args = make_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print(f"hrl {args.command}: interrupted", file=sys.stderr)
        return 130
    except (ConfigError, FileNotFoundError) as err:
        print(f"hrl {args.command}: error: {error_line(err)}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"hrl {args.command}: error: {error_line(err)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
