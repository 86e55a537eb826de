"""`python -m recallmesh.console`: the console with its settings from the environment."""

import sys

from recallmesh.console.server import run
from recallmesh.console.settings import ConsoleSettings
from recallmesh.shared.settings import ConfigError

try:
    settings = ConsoleSettings.from_env()
except ConfigError as exc:
    print(f"recallmesh console: bad configuration: {exc}", file=sys.stderr)
    sys.exit(2)
sys.exit(run(settings))
