"""The recallmesh gateway: the public MemoryService (store, get, delete, recall)."""
