"""Start and stop a server process on loopback, wait for readiness, and the capability check."""
