"""One module per rule. A module defines one `Rule` subclass; its catalogue entry is `rules/CODE-name.toml`."""
