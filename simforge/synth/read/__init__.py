"""synth, stage 1: the inputs read (trace paths to episodes, snapshot files to raw tables)."""
