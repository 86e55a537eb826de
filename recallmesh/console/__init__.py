"""The web console (`recallmesh console`, docs/console.md): look at what an agent remembers,
why a recall answered what it did, what changed and when, and fix it by hand. A client of the
gateway through the typed client, with the signed-in key's namespaces and scopes; it never
opens the database (docs/decisions/0019-console.md)."""
