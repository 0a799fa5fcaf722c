"""MAI: multi-agent inference with vision-language models (arXiv 2604.04929), reference implementation."""


class MaiError(Exception):
    """A mistake a user can fix (unknown name, no hub, no CUDA): the CLI prints it as one line, no traceback."""

    exit_status = 2  # a usage mistake, as argparse exits on one


class MaiEnvironmentError(MaiError):
    """Not the flags but the machine: an unreadable file, an --out that cannot be written, a run directory
    another process is writing. Printed as one line like any MaiError, with exit status 1."""

    exit_status = 1
