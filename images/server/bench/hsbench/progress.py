"""Progress lines in the same shape as the Makefile's `progress` helper, so a person sees where a long run is."""
import sys
import time


def step(message: str) -> None:
    print(f"==> [{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def warn(message: str) -> None:
    print(f"!!  [{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
