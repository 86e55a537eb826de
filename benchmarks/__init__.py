"""recallmesh benchmarks: scripts that print tables (numbers in docs come from here)."""
