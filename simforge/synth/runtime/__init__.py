"""Running a learned handler description: the interpreter, its compiled form, the replay table."""
