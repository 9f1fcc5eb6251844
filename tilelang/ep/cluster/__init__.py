"""A cluster model of the EP collectives: ranks in nodes, links as bandwidth pools with
latencies, and a replay of the messages dispatch and combine send for a routing.

`spec` (the machine), `traffic` (the messages), `replay` (the event simulation), `model`
(the entry point: `simulate`, `token_bytes`)."""
