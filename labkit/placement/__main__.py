"""`python -m labkit.placement --help`: see labkit.placement.cli."""

import sys

from labkit.placement.cli import main

if __name__ == "__main__":
    sys.exit(main())
