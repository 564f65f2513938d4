"""modeling package of the CMLM garden."""
