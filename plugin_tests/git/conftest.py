"""Git tests: apps whose provider base URLs point at the test's ``http_receiver``."""
