"""Applications that drive the simulated TCP hosts (bulk transfer, naglemark)."""
