"""``python -m k8s_workloads.testing serve``: a local cluster (see ``_local``)."""

import sys

from k8s_workloads.testing.local import main

sys.exit(main())
