"""`python -m tilelang.fuzz`: a fuzz campaign (campaign.py)."""
import sys

from .campaign import main

sys.exit(main())
