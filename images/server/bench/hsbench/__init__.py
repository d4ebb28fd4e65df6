"""Hyperstatic's server benchmark: our server against a tuned nginx on loopback, pinned and CPU-capped."""
