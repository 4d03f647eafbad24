"""synth, stage 4: one task per source episode, with what proves its work."""
