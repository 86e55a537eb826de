"""Latency and throughput through the real services: embedding, gateway recall, recall latency,
the vector leg."""
