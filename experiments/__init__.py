"""experiments package of the CMLM garden."""
