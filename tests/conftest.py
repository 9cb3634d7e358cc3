import os
import sys

# The naive reference models live beside the tests.
sys.path.insert(0, os.path.dirname(__file__))
