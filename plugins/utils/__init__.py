"""utils: health, version, metrics, display templates and JSONata testing."""
