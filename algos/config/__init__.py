"""The config layer: the typed schema (every toggle), the component registries, presets, invariants and warnings."""
