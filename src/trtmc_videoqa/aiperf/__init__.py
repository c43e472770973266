"""The AIPerf client: finding the published executable, its input file, its argv, and reading its exports."""
