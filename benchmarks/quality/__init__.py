"""Retrieval quality read from the harness's results (headline, report header, relabel) and the
concept-name similarity check behind the merge threshold."""
