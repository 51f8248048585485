"""Front ends over the engine: the command line, the runner, configuration, cache, output, flake8."""
