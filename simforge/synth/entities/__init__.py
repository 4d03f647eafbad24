"""synth, stage 2: the entities recognised, and their seed rows."""
