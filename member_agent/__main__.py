import sys

from member_agent.cli import main

sys.exit(main())
