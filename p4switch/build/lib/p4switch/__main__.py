"""`python -m p4switch`: the same as the `p4switch` command."""

import sys

from p4switch.cli import main

sys.exit(main())
