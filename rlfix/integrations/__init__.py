"""Optional integrations (Ray, wrapped commands); each imports its heavy dependency lazily."""
