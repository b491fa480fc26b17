"""`python -m p4diff`: see p4diff.cli."""

import sys

from p4diff.cli import main

sys.exit(main())
