import sys

from hivecat.cli import main

sys.exit(main())
