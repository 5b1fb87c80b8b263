"""The shadow sidecar: mirror production decisions to a scorer and record proposals beside outcomes."""
