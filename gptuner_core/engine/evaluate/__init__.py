"""Measuring one route: the evaluators (isolated, in-process, recorded), re-validation rounds and their prefetch.
May import backends, measurement, records, decide/verdict, files/, process/ and scale/; never loop/ or the CLI."""
