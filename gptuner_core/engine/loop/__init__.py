"""Running a study: the Tuner, the ask -> evaluate -> tell loop and its parts, the sink, the ETA, replay.
May import every other room and every layer below the engine; never views, the dashboard or the CLI."""
