"""Scale-out: candidate pools, build-ahead, Ray workers, the device gate."""
