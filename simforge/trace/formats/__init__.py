"""One adapter module per trace format; each registers itself with the format registry."""
