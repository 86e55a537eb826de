"""`python -m recallmesh.cli`: the `recallmesh` command."""

import sys

from recallmesh.cli import main

sys.exit(main())
