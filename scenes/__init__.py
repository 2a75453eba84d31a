"""The scene library shipped with flock3d (TOML files; installed as flock3d.scenes)."""
