"""TODO"""
from .commands import main
