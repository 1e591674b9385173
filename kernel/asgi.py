"""The module-level ASGI app for uvicorn: ``uvicorn kernel.asgi:app``."""

from kernel.app import create_app
from kernel.base.logconfig import configure_logging
from kernel.base.settings import Settings

_settings = Settings.from_env()
configure_logging(_settings.log_level, _settings.log_format)
app = create_app(_settings)
