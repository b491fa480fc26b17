"""The `innet` command line: the top application, on everything below it.

main.py   `innet` and its commands: plan (the planner), run and sums (the experiment runner),
          net up/down, serve and the commands that talk to the service (the testbed service)

Nothing in innet's packages imports this one (tests/unit/test_layout.py holds it), so the
controller's core and its applications know nothing of the command line built on them.
"""

from innet_cli.main import build_parser, main

__all__ = ["build_parser", "main"]
