"""Measuring one route: the evaluators (isolated, recorded), re-validation rounds and their prefetch, seam types.
May import decide/verdict, files/, process/, scale/ and the layers below the engine; never loop/ (lint-imports)."""
