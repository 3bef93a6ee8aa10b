"""The temporal knowledge graph (spec §18, §20) and its semantic and dedup workers."""
