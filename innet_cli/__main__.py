"""`python -m innet_cli`: the `innet` command."""

import sys

from innet_cli.main import main

sys.exit(main())
