"""Reference for coordinator_bench ingest: Optuna's RDB storage on SQLite
recording intermediate values (trial.report) from N processes for S seconds.

Each process loads the same study, asks for one trial and reports
(value, step) in a closed loop, one committed write per call, like a worker
reporting a loss point. Prints values/s, per-call latency percentiles and a
check that every reported value is stored.

    /usr/bin/python3 bench/reference/optuna_ingest_reference.py \
        --processes 8 --seconds 10 --dir /tmp/x
"""
import argparse
import multiprocessing
import os
import time

import optuna


def percentile(values, p):
    if not values:
        return 0.0
    values = sorted(values)
    i = min(len(values) - 1, int(p / 100.0 * (len(values) - 1) + 0.5))
    return values[i]


def worker(url, study_name, start_at, seconds, queue):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = optuna.storages.RDBStorage(
        url, engine_kwargs={"connect_args": {"timeout": 120}})
    study = optuna.load_study(study_name=study_name, storage=storage)
    trial = study.ask()
    while time.time() < start_at:
        time.sleep(0.001)
    deadline = start_at + seconds
    latencies = []
    step = 0
    errors = 0
    while time.time() < deadline:
        t0 = time.perf_counter()
        try:
            trial.report(4.0 / (step + 1), step)
            step += 1
        except Exception:  # a locked database surfaces here
            errors += 1
        latencies.append((time.perf_counter() - t0) * 1000.0)
    study.tell(trial, 0.0)
    queue.put((trial.number, step, errors, latencies))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--dir", default=".")
    args = parser.parse_args()

    path = os.path.join(args.dir, "optuna.db")
    url = "sqlite:///" + path
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = optuna.storages.RDBStorage(url)
    study = optuna.create_study(study_name="ingest", storage=storage)

    queue = multiprocessing.Queue()
    start_at = time.time() + 3.0  # every process connected before the clock starts
    procs = [
        multiprocessing.Process(
            target=worker, args=(url, "ingest", start_at, args.seconds, queue))
        for _ in range(args.processes)
    ]
    for p in procs:
        p.start()
    results = [queue.get() for _ in procs]
    for p in procs:
        p.join()

    reported = sum(r[1] for r in results)
    errors = sum(r[2] for r in results)
    latencies = [x for r in results for x in r[3]]
    stored = sum(len(t.intermediate_values) for t in study.get_trials())
    print("  %d processes x %.0f s: %d values = %.0f values/s" %
          (args.processes, args.seconds, reported, reported / args.seconds))
    print("  report latency p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  max %.3f ms" %
          (percentile(latencies, 50), percentile(latencies, 90),
           percentile(latencies, 99), percentile(latencies, 100)))
    print("  stored %d values; lost %d; failed calls %d" %
          (stored, reported - stored, errors))


if __name__ == "__main__":
    main()
