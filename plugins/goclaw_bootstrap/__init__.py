"""Bootstrap: the default context-file templates, seeding them, and agent summoning."""
