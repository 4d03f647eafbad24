"""synth, stage 3: what each tool does, learned from its observed calls."""
