"""One session: the client, runner, permission gate, transcript, fleet and local model."""
