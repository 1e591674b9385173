"""The rules agents work under: the constitution, the trust ledger, the kill switch, the role library."""
