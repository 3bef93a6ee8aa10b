"""Context files stored in the database: the essential ``files`` service."""
