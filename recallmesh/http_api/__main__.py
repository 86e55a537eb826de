"""`python -m recallmesh.http_api`: the HTTP/JSON API with its settings from the environment."""

import sys

from recallmesh.http_api.server import run
from recallmesh.http_api.settings import HttpSettings
from recallmesh.shared.settings import ConfigError

try:
    settings = HttpSettings.from_env()
except ConfigError as exc:
    print(f"recallmesh http: bad configuration: {exc}", file=sys.stderr)
    sys.exit(2)
sys.exit(run(settings))
