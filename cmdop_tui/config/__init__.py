"""Settings: the TOML file, profiles, flags and environment, as frozen dataclasses."""
