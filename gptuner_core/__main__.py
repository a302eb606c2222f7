from __future__ import annotations

import sys

from gptuner_core.cli import main


sys.exit(main())
