from mai.families import FAMILIES  # noqa: F401
