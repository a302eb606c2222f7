"""What a study leaves on disk: the study folder (workspace), inputs, build artifacts, destinations, export.
May import decide/verdict, process/processes and the layers below; never loop/ or evaluate/ (lint-imports)."""
