"""Scheduler throughput benchmarks (not tests): decisions per second in-process, pods bound per second end to
end through an API server, and the spread of pods per node.

    ./lab benchmark                       # in-process sizes + the in-repo API test server
    ./lab benchmark --kubeconfig FILE     # also end to end through a real API server
    .venv/bin/python -m benchmarks.scheduler_bench --help

Modules: ``cluster`` (fake node / pod objects, as upstream scheduler_perf makes them), ``inprocess`` (one
size per subprocess), ``endtoend`` (create, schedule, measure, delete through an API server),
``testserver`` (the in-repo API test server as a subprocess), ``report`` (rich table and JSON),
``scheduler_bench`` (the command), ``ab`` (two checkouts interleaved), ``gangs`` (gangs of the coscheduling
example end to end), ``dra`` (pods with DRA claims end to end, beside pods without), ``watch_cuts`` (watches
cut during a big burst), ``dra_cel`` (DRA CEL device selectors: compile and evaluation cost per call),
``simulate`` (`./lab simulate` at 5,000 nodes and 50,000 pods).
"""
