"""personas."""
