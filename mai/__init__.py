"""MAI: multi-agent inference with vision-language models (arXiv 2604.04929), reference implementation."""


class MaiError(Exception):
    """A mistake a user can fix (unknown name, no hub, no CUDA): the CLI prints it as one line, no traceback."""
