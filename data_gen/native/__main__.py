"""`python -m data_gen.native`: which C accelerators are built and in use."""
import sys

from data_gen.native import main

sys.exit(main())
