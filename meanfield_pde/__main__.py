import sys

try:
    from .cli.commands import main
except KeyboardInterrupt:  # Ctrl-C while the libraries load: no traceback
    print("meanfield-pde: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
