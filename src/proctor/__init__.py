"""proctor: how well do AI agents do real work through a shell?"""

__version__ = "0.1.0"
