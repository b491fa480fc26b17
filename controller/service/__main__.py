"""`python -m controller.service`: the testbed service in this process (see server.py)."""

import sys

from controller.service.server import main

sys.exit(main())
