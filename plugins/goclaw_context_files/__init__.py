"""Context files stored in the database (spec §4-§6): the essential ``files`` service."""
