"""The HTTP/JSON API: every MemoryService RPC over HTTP with JSON, a thin front of the gateway
(app.py over transcode.py), its OpenAPI 3.1 description generated from the protos
(openapi.py), served by `recallmesh http` and by `recallmesh up` (docs/http.md)."""
