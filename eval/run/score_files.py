"""The files an evaluation writes into its folder, named once: what the reports read without loading a model."""

PROTOCOL_FILE = "protocol.json"
RECORDS_FILE = "records.jsonl"
METRICS_FILE = "metrics.json"
