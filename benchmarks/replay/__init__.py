"""Candidate pools dumped once through the real stack (pool.py), replayed with the gateway's own
fusion and post-fusion code: the context sweep, the levers, other embedding models."""
