"""The temporal knowledge graph and its semantic and dedup workers."""
