"""Facts about one file that several rules need, computed once and shared."""
