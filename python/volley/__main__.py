"""``python -m volley COMMAND``: the commands that need Python's torch (the others are the C++
``volley`` command's).

    python -m volley serve DIR --part auto --rendezvous HOST:PORT [...]   # volley._serve
"""

from __future__ import annotations

import sys
from typing import Optional, Sequence

USAGE = ("usage: python -m volley serve DATASET --part N|auto --rendezvous HOST:PORT|env [...]\n"
         "(python -m volley serve --help for every option; the other commands are the C++ "
         "`volley` command's)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command ``argv`` names; its exit status (2 for an unknown command)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "serve":
        got = f": unknown command {argv[0]!r}" if argv and not argv[0].startswith("-") else ""
        print(f"python -m volley{got}\n{USAGE}", file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    from ._serve import main as serve

    return serve(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
