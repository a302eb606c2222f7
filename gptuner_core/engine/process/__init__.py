"""Processes: the launcher and fork server, a candidate's child, isolation, detached tuners."""
