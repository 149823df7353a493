"""`python -m lab.families`: see lab.tools.families."""

import sys

from lab.tools.families import main

sys.exit(main())
