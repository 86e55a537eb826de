"""`recallmesh mcp`: the MCP server that gives an agent recallmesh's memory as tools
(store_memory, recall, context, get_memory, update_memory, forget, list_memories,
count_memories, memory_history) over stdio or streamable HTTP, on the official MCP Python SDK
(the `mcp` extra). docs/mcp.md is the guide."""

from recallmesh.mcp_server.server import INSTRUCTIONS, build_server, run

__all__ = ["INSTRUCTIONS", "build_server", "run"]
