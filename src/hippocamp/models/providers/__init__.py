"""Built-in model providers; each registers under kind ``provider`` (see `hippocamp.registry`)."""
