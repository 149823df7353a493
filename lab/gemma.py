"""`python -m lab.gemma`: see lab.tools.gemma."""

import sys

from lab.tools.gemma import main

sys.exit(main())
