"""`python -m pokna_verify ...` is `pokna-verify ...`, for an environment whose scripts are not on PATH."""

import sys

from pokna_verify.cli import main

sys.exit(main())
