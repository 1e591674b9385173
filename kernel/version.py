"""The version of svc (``kernel.__version__``): the OpenAPI document, ``/server/info`` and health show it."""

__version__ = "0.1.0"
