"""Parts of benchmarks/operator_scale.py: the environment it runs in (env.py: control plane, moto, the operator's
identity and process), the resources it creates (scenario.py), the watches that time them (watch.py), the spec
changes it makes and times (changes.py), the API server's audit log read over a window (audit.py), small figure
helpers (figures.py) and what it prints (report.py: the table, the operator's log read for problems).

The test harness in tests/ (tests/kube, tests/support) is imported from here: operator_scale.py puts that
directory on sys.path before importing this package."""
