#!/usr/bin/python3
"""Optuna's TPE with its SuccessiveHalving pruner on known-truth experiments.

The Optuna reference for bench/search_bench (bench/RESULTS.md "Search on
known truth"): for each structure and search seed 1..N it writes the same
experiment search_bench generates (bench/known_truth_fixture with
--structure and --seed, every other parameter at its default: 120 schedules,
3 seeds, 200 steps, evals every 10, noise sd 0.006), runs one Optuna study
over its curves with optuna_replay.py's search() (TPE seeded with the search
seed over a categorical of every schedule, the baseline included; a trial
"trains" its schedule on all seeds, reporting the mean val loss at each
eval; SuccessiveHalvingPruner(min_resource=--rung, reduction_factor=--eta);
the study stops once the steps spent reach --budget-fraction of the grid's
120 x 3 x 200), and scores the best completed trial with the .truth file as
search_bench does: exact best, regret = (true delta of the choice - the
best's) / noise sd, the share within 1 sd, steps / grid steps.

Needs Debian's python3-optuna and a built bench/known_truth_fixture.

  /usr/bin/python3 bench/reference/optuna_known_truth.py \
      --fixture-bin build/bench/known_truth_fixture --dir /tmp/known_truth \
      --budget-fraction 0.38 --rung 40 --searches 20
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import optuna  # noqa: E402
from optuna_replay import load_fixture, search  # noqa: E402

STRUCTURES = "smooth,isolated-best,fading-trap,null,near-ties"


def fixture(binary, directory, structure, seed):
    """Writes (once) and returns the prefix of the experiment's files."""
    prefix = os.path.join(directory, f"{structure}_{seed}")
    if not all(os.path.exists(prefix + ext) for ext in (".replay", ".truth")):
        subprocess.run([binary, "--structure", structure, "--seed", str(seed),
                        "--out", prefix], check=True, stdout=subprocess.DEVNULL)
    return prefix


def load_truth(path):
    """Returns (best, {schedule: true delta}, {schedule: noise sd})."""
    best, delta, sd = None, {}, {}
    for line in open(path):
        f = line.split()
        if not f:
            continue
        if f[0] == "#":
            best = f[2]
            continue
        delta[f[0]], sd[f[0]] = float(f[1]), float(f[2])
    return best, delta, sd


def grid_row(curves, schedules, seeds, steps, delta, best, noise_sd):
    """search_bench's grid: every schedule to the end; the choice is the
    lowest mean final val loss among the non-baseline schedules (the lowest
    mean paired delta; the baseline is the uniform schedule, the one without
    a comma)."""
    chosen = min((s for s in schedules if "," in s), key=lambda s:
                 statistics.mean(curves[(s, k)][steps] for k in seeds))
    return {"exact": chosen == best, "fraction": 1.0,
            "regret": (delta[chosen] - delta[best]) / noise_sd}


def print_row(structure, label, rows, extra):
    n = len(rows)
    print(f"| {structure} | {label} "
          f"| {sum(r['exact'] for r in rows)}/{n} "
          f"| {sum(r['regret'] <= 1.0 + 1e-9 for r in rows)}/{n} "
          f"| {statistics.mean(r['regret'] for r in rows):.2f} "
          f"| {max(r['regret'] for r in rows):.2f} "
          f"| {statistics.mean(r['fraction'] for r in rows):.1%} "
          f"({max(r['fraction'] for r in rows):.1%}) | {extra} | - |",
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fixture-bin", required=True,
                    help="bench/known_truth_fixture")
    ap.add_argument("--dir", required=True,
                    help="where the experiments are written (and reused)")
    ap.add_argument("--structures", default=STRUCTURES)
    ap.add_argument("--budget-fraction", type=float, required=True)
    ap.add_argument("--rung", type=int, required=True,
                    help="the pruner's min_resource")
    ap.add_argument("--eta", type=int, default=3)
    ap.add_argument("--searches", type=int, default=20)
    ap.add_argument("--noise-sd", type=float, default=0.006,
                    help="the experiments' noise sd (the regret's unit)")
    ap.add_argument("--grid-row", action="store_true",
                    help="also a grid row: the lowest mean final val loss "
                         "among the non-baseline schedules, all trained (a "
                         "check that these are search_bench's experiments)")
    ap.add_argument("--out", help="JSON of every search")
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    os.makedirs(args.dir, exist_ok=True)

    label = f"optuna-tpe-sh {args.budget_fraction:.1%} (rung {args.rung})"
    print("| structure | strategy | exact best | regret <= 1 sd | mean regret "
          "(sd) | max regret (sd) | grid steps mean (max) | trials "
          "(completed), mean | re-proposed | named a winner |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    everything = []
    for structure in args.structures.split(","):
        rows, grid_rows = [], []
        for seed in range(1, args.searches + 1):
            prefix = fixture(args.fixture_bin, args.dir, structure, seed)
            config, curves = load_fixture(prefix + ".replay")
            best, delta, _ = load_truth(prefix + ".truth")
            schedules = sorted({k[0] for k in curves})
            seeds = sorted({k[1] for k in curves})
            steps = int(config["steps"])
            every = int(config["eval_every"])
            evals = list(range(every, steps + 1, every))
            grid = len(schedules) * len(seeds) * steps
            row = search(curves, schedules, seeds, evals, args.rung, args.eta,
                         args.budget_fraction * grid, seed)
            # As search_bench: no choice counts as the baseline (delta 0).
            chosen = delta[row["chosen"]] if row["chosen"] else 0.0
            row.update(structure=structure, seed=seed, best=best,
                       exact=row["chosen"] == best,
                       regret=(chosen - delta[best]) / args.noise_sd,
                       fraction=row["steps"] / grid)
            rows.append(row)
            print(f"# {structure} seed {seed}: chose {row['chosen']} "
                  f"(best {best}) regret {row['regret']:.2f} sd, "
                  f"{row['fraction']:.1%} of grid steps, {row['trials']} "
                  f"trials ({row['completed']} completed, "
                  f"{row['repeats']} repeats)", file=sys.stderr, flush=True)
            if args.grid_row:
                grid_rows.append(grid_row(curves, schedules, seeds, steps,
                                          delta, best, args.noise_sd))
        trials = sum(r["trials"] for r in rows)
        if grid_rows:
            print_row(structure, "grid (these fixtures)", grid_rows, "- | -")
        print_row(structure, label, rows,
                  f"{trials / len(rows):.1f} "
                  f"({statistics.mean(r['completed'] for r in rows):.1f}) | "
                  f"{sum(r['repeats'] for r in rows) / trials:.0%}")
        everything += rows
    if args.out:
        json.dump({"args": vars(args), "searches": everything},
                  open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
