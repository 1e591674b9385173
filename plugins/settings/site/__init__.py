"""The site configuration, its field checks, preferences and view presets, with their routes."""
