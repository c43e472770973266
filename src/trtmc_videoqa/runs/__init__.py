"""The run's owner: one typed request in, the ladders climbed, and always the report and the public check out."""
