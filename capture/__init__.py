"""Capture: the native decoder bindings, the packet schema, namespaces, link emulator, workloads."""
