"""The trusted parent: it builds, inspects, runs and decides; it never imports candidate code."""
