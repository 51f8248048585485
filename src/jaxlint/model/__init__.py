"""Plain values shared by every layer: findings, fixes, positions, severities, settings, a file's result."""
