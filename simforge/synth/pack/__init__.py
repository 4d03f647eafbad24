"""synth, stage 5: the pack directory written, and loaded back as a Pack."""
