"""`python -m bench`: run the benchmark (see `bench/run`)."""

import sys

from bench.main import main

sys.exit(main())
