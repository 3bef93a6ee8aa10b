"""Bootstrap: context files in the database, templates, seeding and truncation (spec §1-§4)."""
