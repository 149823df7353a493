"""`python -m lab.medusa`: the command that trains Medusa heads (lab.train.medusa)."""

import sys

from lab.train.medusa import main

sys.exit(main())
