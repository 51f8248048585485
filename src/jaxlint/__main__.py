from .frontends.cli import main

main()
