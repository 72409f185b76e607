#!/usr/bin/env python3
"""plan_accuracy.py: the bill (issue 41) against what real training costs.

Starts `prism coordinator` on loopback (edge_rss.start_coordinator) and
`--workers` real CPU workers (`prism worker --threads 1`), then:
  1. plans a small tiny-preset spec on seed 1 (no trial has run: the
     throughput is the stated table's, "assumed"), submits it, waits;
  2. plans adding seeds 2 and 3 (`add_seeds(to=3, dry_run=True)`: the
     throughput is now measured on those trials), adds them, waits.
For each it prints the bill's steps, tokens and worker time against what the
trials trained and held: steps and tokens from their metrics, worker time as
the sum of their attempts' durations (lease to completion: model build and
evals included, which tokens/s does not count).

  bench/plan_accuracy.py [--build build] [--workers 2] [--steps 60]

Run it alone: the figures are CPU time on this machine.
"""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from edge_rss import start_coordinator  # noqa: E402

SCHEDULES = ["2x2,4x4", "1x2,4x4", "2x3,4x3"]


def spec_text(steps):
    listed = "\n".join(f'schedules: "{s}"' for s in SCHEDULES)
    return f"""name: "plan accuracy"
model {{ preset: "tiny" }}
budget {{ steps: {steps} batch_size: 8 eval_every: {steps // 2}
          eval_batches: 2 log_every: 10 learning_rate: 0.002 }}
{listed}
seeds: 1
"""


def actual(client, pb, experiment_id, trial_ids=None):
    """(steps, tokens, worker seconds) over the experiment's completed
    trials (those in trial_ids when given)."""
    response = client.call(client.experiments_stub.ListTrials,
                           pb.ListTrialsRequest(experiment_id=experiment_id,
                                                page_size=1000))
    steps = tokens = seconds = 0.0
    ids = []
    for t in response.trials:
        if trial_ids is not None and t.id not in trial_ids:
            continue
        ids.append(t.id)
        full = client.call(client.results_stub.GetTrial,
                           pb.GetTrialRequest(trial_id=t.id)).trial
        steps += full.metrics.steps
        for a in full.attempts:
            if a.ended_unix_ms > a.started_unix_ms:
                seconds += (a.ended_unix_ms - a.started_unix_ms) / 1000
    return steps, seconds, ids


def row(label, plan, steps, seconds, tokens_per_step):
    e = plan.estimate
    predicted = e.get("worker_hours", 0.0) * 3600
    print(f"| {label} | {e.get('throughput_source', '')[:60]} | "
          f"{e.get('steps', 0):,.0f} / {steps:,.0f} | "
          f"{e.get('tokens', 0):,.0f} / {steps * tokens_per_step:,.0f} | "
          f"{predicted:,.1f} / {seconds:,.1f} s | "
          f"{predicted / seconds if seconds else float('nan'):.2f} |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    prism = str((root / args.build / "cli/prism").resolve())
    sys.path.insert(0, str(root / args.build / "clients/python/gen"))
    sys.path.insert(0, str(root / "clients/python"))
    import prism_client
    from prism.v1 import prism_pb2 as pb

    with tempfile.TemporaryDirectory(prefix="prism-plan-accuracy-") as tmp:
        coordinator, addresses = start_coordinator(prism, tmp)
        if addresses is None:
            print("the coordinator did not start", file=sys.stderr)
            return 1
        workers = []
        try:
            client = prism_client.connect(
                addresses["grpc"],
                token_file=os.path.join(tmp, "admin.token"))
            for i in range(args.workers):
                workers.append(subprocess.Popen(
                    [prism, "worker", "--coordinator", addresses["grpc"],
                     "--token-file", os.path.join(tmp, "admin.token"),
                     "--threads", "1", "--data-root",
                     os.path.join(tmp, "prism-data", "corpus")],
                    cwd=tmp, stdout=open(os.path.join(tmp, f"w{i}.log"), "w"),
                    stderr=subprocess.STDOUT))
            spec = spec_text(args.steps)
            first = client.plan(spec)
            submitted = client.submit(spec)
            client.wait(submitted.id, progress=False)
            tokens_per_step = first.estimate["tokens_per_step"]
            steps, seconds, seed1 = actual(client, pb, submitted.id)
            print("| bill | throughput | steps planned / trained | tokens "
                  "planned / trained | worker time planned / held | ratio |")
            print("| --- | --- | --- | --- | --- | --- |")
            row("submit, seed 1 (4 trials)", first, steps, seconds,
                tokens_per_step)
            more = client.add_seeds(submitted.id, to=3, dry_run=True)
            client.add_seeds(submitted.id, to=3)
            client.wait(submitted.id, progress=False)
            _, _, every = actual(client, pb, submitted.id)
            new = set(every) - set(seed1)
            steps, seconds, _ = actual(client, pb, submitted.id, new)
            row("add seeds 2, 3 (8 trials)", more, steps, seconds,
                tokens_per_step)
        finally:
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait(timeout=60)
            coordinator.terminate()
            coordinator.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
