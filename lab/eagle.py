"""`python -m lab.eagle`: the command that trains an EAGLE layer (lab.train.eagle)."""

import sys

from lab.train.eagle import main

sys.exit(main())
