"""What read and write share: the context of a call, the live rows, and the checks.

``context`` (the collection, the transaction or reader, the write's cause, ``acting_context``),
``rows`` (live rows, ``fetch_row``), ``guard`` (``kernel.access`` decisions), ``grants`` (field
grants paired with their rule's condition), ``rowfilter`` (permission conditions -> SQL),
``validation`` (bodies), ``records`` (an item as the API shows it), ``reveal`` (the ``items.read``
hook every answer goes through), ``etags``, ``live`` (live topics), ``personal`` (an item's
personal data for export), ``write_triggered`` (jobs that follow writes, coalesced).
"""
