"""The `recallmesh` command (recallmesh.cli.command has every command).

The entry point imports nothing beyond the standard library before it knows the server extra
is installed: `pip install recallmesh` alone is the Python client (grpcio and protobuf), yet
Python packaging installs a package's command with it whatever extras are chosen, so there the
command says in one line what to install instead of failing on its first import.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

INSTALL_HINT = ("the recallmesh command needs the server extra: pip install 'recallmesh[server]' "
                "(or 'recallmesh[cpu]' to run the stack too); without an extra the package is "
                "the Python client only (docs/client.md)")


def main(argv: list[str] | None = None) -> int:
    try:
        from recallmesh.cli import command
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] == "recallmesh":
            raise
        print(f"recallmesh: {INSTALL_HINT} (missing: {exc.name})", file=sys.stderr)
        return 2
    return command.main(argv)


def build_parser() -> argparse.ArgumentParser:
    from recallmesh.cli import command

    return command.build_parser()
