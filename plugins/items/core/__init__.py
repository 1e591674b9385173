"""The data path of item writes and checks: the service behind ``api``, rows and events, validation, access.

``service`` (create, read, update, delete: the one data path), ``writes`` (rows + bus and durable
events, through ``events``), ``validation`` (bodies), ``guard`` (``kernel.access`` decisions),
``grants`` (field grants paired with their rule's condition), ``rowfilter`` (permission conditions
-> SQL), ``ondelete``/``refs`` (relations held in JSON), ``dependents``, ``records`` (an item as
the API shows it).
"""
