"""The rating tests share one real run folder per process; each test gets a private copy."""

from tests.helpers.rating_run import pristine_run, run_dir

__all__ = ["pristine_run", "run_dir"]
