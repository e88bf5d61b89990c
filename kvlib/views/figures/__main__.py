"""``python -m kvlib.views.figures [OUTDIR]`` (``make figures``)."""

import sys

from kvlib.views.figures import main

sys.exit(main())
