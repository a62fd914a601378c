"""User-space link emulator: pure per-direction decisions (model) and the AF_PACKET bridge that applies them."""
