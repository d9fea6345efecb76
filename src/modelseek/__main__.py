import sys

from modelseek.cli.main import main

sys.exit(main())
