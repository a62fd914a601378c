"""Link models in Python: the named link presets, and the pure decision classes (ATM cell
switching, a NIC's jumbo-slot pool, loss models, a path-MTU hop) that the capture package's
user-space emulator applies to live packets. The simulator's own links are in its native core.
"""
