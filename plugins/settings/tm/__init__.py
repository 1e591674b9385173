"""Translation memory: entries, the lookup index and fuzzy lookup, the glossary, translate, the routes."""
