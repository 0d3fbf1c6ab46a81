"""`python -m rlfix` runs the command-line interface."""

from rlfix.cli import main

if __name__ == "__main__":
    main()
