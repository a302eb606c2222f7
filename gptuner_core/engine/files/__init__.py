"""What a study leaves on disk: the study folder (workspace), inputs, build artifacts, destinations, export.
May import records, jsonio, npz, decide/verdict and process/processes; never loop/, evaluate/ or the CLI."""
