"""Simulated links: serial links, ATM cell switching, NIC slot pools, loss, path MTU, taps.

The decision classes (atm, nic, loss, pmtu) are pure: time is passed in and they hold no
simulator types, so the capture package's user-space emulator can reuse them.
"""
