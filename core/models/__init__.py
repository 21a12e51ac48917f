"""Loading models: the embedded wheel, Hub ids and local folders, the size policy, pair presets, prompts."""
