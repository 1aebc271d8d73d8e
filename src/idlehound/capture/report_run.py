"""Moved to idlehound.app (capture no longer imports the layers above it); this name stays because
tests/scripts/faults/zygote.py preloads it. It imports nothing."""
