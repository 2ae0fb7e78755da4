"""`python -m fmquality.cli`: the same as the `fmquality` command."""

import sys

from fmquality.cli.main import main

sys.exit(main())
