"""Static tripwires on candidate source. PLACEHOLDER until the integrity work lands: same signature."""


def scan_source(source: str) -> list[str]:
    return []
