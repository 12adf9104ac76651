"""`python -m scheduler --config FILE [--kubeconfig FILE]`: see scheduler.cli."""

import sys

from scheduler.cli import main

if __name__ == "__main__":
    sys.exit(main())
