"""Analyzers: connection model, sender state, stall classification, comparison with the simulator."""
