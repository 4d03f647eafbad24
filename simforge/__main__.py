"""`python -m simforge` runs the command line."""

from simforge.cli import main

main()
