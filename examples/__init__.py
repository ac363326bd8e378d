"""Example agents to copy: in-process adapter, HTTP turn server, WebSocket streaming server."""
