"""`python -m lab`: see cli.py."""

import sys

from lab.cli import main

sys.exit(main())
