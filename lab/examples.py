"""`python -m lab.examples`: see lab.tools.examples."""

import sys

from lab.tools.examples import main

sys.exit(main())
