"""Running a study: the Tuner, the ask -> evaluate -> tell loop and its parts, the sink, the ETA, replay.
May import every other engine room, strategies, storage and records; never the dashboard, views or CLI."""
