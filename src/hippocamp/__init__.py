"""hippocamp: build personal-computer environments, run agents in them, score answers and evidence."""

__version__ = "0.1.0"
__all__ = ["__version__"]
