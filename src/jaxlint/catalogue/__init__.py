"""The rule catalogue (one TOML entry per rule) and the table of deprecated JAX APIs."""
