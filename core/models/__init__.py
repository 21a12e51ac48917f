"""Loading models: offline wheel models (catalog, wheels), Hub ids and folders (loading), the size policy,
precision, pair presets, resources (disk, memory, the cache) and prompts. See README's model section."""
