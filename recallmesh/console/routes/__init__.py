"""The console's route table: every URL it serves, its methods and its handler, in one
list (`ROUTES`) that the app mounts and the metrics read their route labels from
(`route_name`), so that a new page is counted under its own template from the start.

Every page but sign-in and the probes is behind the sign-in guard (guard.signed_in); the
handlers are grouped by what they serve: sign-in and sign-out (session.py), the namespaces
and a namespace's list (namespaces.py), one memory (memories.py), recall (recall.py), many
memories at once (bulk.py)."""

from __future__ import annotations

from importlib.resources import files

from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from recallmesh.console.guard import signed_in
from recallmesh.console.routes import bulk, memories, namespaces, probes, recall, session

MEMORY = "/ns/{namespace}/m/{memory_id}"

ROUTES: tuple[BaseRoute, ...] = (
    Route("/healthz", probes.healthz),
    Route("/readyz", probes.readyz),
    Mount("/static", app=StaticFiles(directory=str(files("recallmesh.console") / "static")),
          name="static"),
    Route("/sign-in", session.sign_in_page, methods=["GET"]),
    Route("/sign-in", session.sign_in, methods=["POST"]),
    Route("/sign-out", signed_in(session.sign_out), methods=["POST"]),
    Route("/", signed_in(namespaces.namespaces)),
    Route("/ns/{namespace}", signed_in(namespaces.memories)),
    Route("/ns/{namespace}/recall", signed_in(recall.recall)),
    Route("/ns/{namespace}/export", signed_in(bulk.export)),
    Route("/ns/{namespace}/import", signed_in(bulk.import_), methods=["POST"]),
    Route("/ns/{namespace}/delete-matching", signed_in(bulk.delete_matching),
          methods=["GET", "POST"]),
    Route(MEMORY, signed_in(memories.memory)),
    Route("/ns/{namespace}/store", signed_in(memories.store), methods=["POST"]),
    Route(f"{MEMORY}/update", signed_in(memories.update), methods=["POST"]),
    Route(f"{MEMORY}/supersede", signed_in(memories.supersede), methods=["POST"]),
    Route(f"{MEMORY}/pin", signed_in(memories.pin), methods=["POST"]),
    Route(f"{MEMORY}/unpin", signed_in(memories.pin), methods=["POST"]),
    Route(f"{MEMORY}/delete", signed_in(memories.delete), methods=["POST"]),
)


def _label(route: Route | Mount) -> str:
    """A route's name in metrics and logs: its template, a memory's id named {id}."""
    return route.path.replace("{memory_id}", "{id}")


_LABELS = [(route.path_regex, _label(route)) for route in ROUTES
           if isinstance(route, Route | Mount)]


def route_name(path: str) -> str:
    """A request's route template, for metrics and logs: never the raw path, which holds
    namespaces and ids, and never a word a client made up (each a label of its own): a path
    no route serves is "other". Matched by path alone, so a route's other methods count
    under its name too."""
    return next((label for regex, label in _LABELS if regex.match(path)), "other")
