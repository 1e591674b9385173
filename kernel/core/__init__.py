"""The services handed to hooks: ``context`` (``Kernel``, ``RequestContext``) and ``uow`` (the unit of
work). Above the event log, the bus and tenancy, which the unit of work uses."""
