"""Response views as pure functions of loaded rows: they never query."""
