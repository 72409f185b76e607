#!/usr/bin/python3
"""Optuna's TPE with its SuccessiveHalving pruner over a replay fixture.

The reference for bench/replay_bench.py (bench/RESULTS.md "Replay"): the same
recorded curves (worker/replay_launcher.h's format), read directly. An Optuna
trial picks one schedule (a categorical over every schedule of the fixture),
"trains" it on every recorded seed at once, reporting the mean val loss over
the seeds at each eval step, and is pruned by SuccessiveHalvingPruner
(min_resource = the first rung, reduction_factor = eta) or completes at the
whole budget with its mean final val loss. Steps are counted as real
training would spend them: the step it was pruned at (or the budget) times
the seeds, again for a schedule TPE proposes twice (Optuna retrains it). The
study stops once the budget of steps is spent; its best completed trial is
the search's choice. Success: the choice is in the grid's tied set (written
by replay_bench.py, from the project's own paired t-test).

Needs Debian's python3-optuna (apt-get install -y python3-optuna).

  /usr/bin/python3 bench/reference/optuna_replay.py \
      --fixture bench/replay/grid_d64_l8_h8.replay \
      --grid /tmp/replay_bench.json --budget-fraction 0.4 --searches 20
"""

import argparse
import collections
import json
import statistics

import optuna


def load_fixture(path):
    """Returns (config, {(schedule, seed): {step: val loss}})."""
    config, curves, key = {}, collections.defaultdict(dict), None
    for line in open(path):
        f = line.split()
        if not f or f[0].startswith("#") or f[0] == "prism-replay":
            continue
        if f[0] == "config":
            config = dict(kv.split("=", 1) for kv in f[1:])
        elif f[0] == "trial":
            key = (f[1], int(f[2]))
        elif f[0] == "v":
            curves[key][int(f[1])] = float(f[2])
    return config, curves


def search(curves, schedules, seeds, eval_steps, rung, eta, budget, seed):
    spent = [0]
    proposals = collections.Counter()

    def objective(trial):
        schedule = trial.suggest_categorical("schedule", schedules)
        proposals[schedule] += 1
        value = None
        for step in eval_steps:
            value = statistics.mean(curves[(schedule, s)][step] for s in seeds)
            trial.report(value, step)
            if trial.should_prune():
                spent[0] += step * len(seeds)
                raise optuna.TrialPruned()
        spent[0] += eval_steps[-1] * len(seeds)
        return value

    sampler = optuna.samplers.TPESampler(seed=seed)
    pruner = optuna.pruners.SuccessiveHalvingPruner(
        min_resource=rung, reduction_factor=eta, min_early_stopping_rate=0)
    study = optuna.create_study(sampler=sampler, pruner=pruner)
    while spent[0] < budget:
        study.optimize(objective, n_trials=1)
    complete = [t for t in study.trials
                if t.state == optuna.trial.TrialState.COMPLETE]
    best = min(complete, key=lambda t: t.value) if complete else None
    return {
        "chosen": best.params["schedule"] if best else None,
        "chosen_loss": best.value if best else None,
        "steps": spent[0], "trials": len(study.trials),
        "completed": len(complete),
        "repeats": sum(n - 1 for n in proposals.values()),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--grid", required=True,
                    help="replay_bench.py's --out: the grid's best, tied "
                         "set and steps")
    ap.add_argument("--budget-fraction", type=float, default=0.4)
    ap.add_argument("--rung", type=int, required=True,
                    help="the pruner's min_resource: ASHA's first rung")
    ap.add_argument("--eta", type=int, default=3)
    ap.add_argument("--searches", type=int, default=20)
    ap.add_argument("--out")
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    config, curves = load_fixture(args.fixture)
    grid = json.load(open(args.grid))["grid"]
    schedules = sorted({k[0] for k in curves})
    seeds = sorted({k[1] for k in curves})
    steps = int(config["steps"])
    eval_every = int(config["eval_every"])
    eval_steps = list(range(eval_every, steps + 1, eval_every))
    budget = args.budget_fraction * grid["steps"]
    best_loss = grid["best_loss"]
    rows = []
    for seed in range(1, args.searches + 1):
        row = search(curves, schedules, seeds, eval_steps, args.rung,
                     args.eta, budget, seed)
        row.update(seed=seed, fraction=row["steps"] / grid["steps"],
                   exact=row["chosen"] == grid["best"],
                   success=row["chosen"] in grid["tied"],
                   regret=(row["chosen_loss"] - best_loss
                           if row["chosen"] else None))
        rows.append(row)
        print(f"optuna seed {seed}: {row['chosen']} "
              f"({row['chosen_loss']:.4f}) "
              f"{'best' if row['exact'] else 'tied' if row['success'] else 'MISS'}"
              f" {row['fraction']:.1%} of grid steps, {row['trials']} trials "
              f"({row['completed']} completed, {row['repeats']} repeats)",
              flush=True)
    print(f"\noptuna TPE + SuccessiveHalving, budget {args.budget_fraction:.0%}"
          f" of the grid: success {sum(r['success'] for r in rows)}/"
          f"{len(rows)}, exact {sum(r['exact'] for r in rows)}/{len(rows)}, "
          f"mean steps/grid {statistics.mean(r['fraction'] for r in rows):.1%},"
          f" mean regret {statistics.mean(r['regret'] for r in rows):.4f}")
    if args.out:
        json.dump({"args": vars(args), "searches": rows}, open(args.out, "w"),
                  indent=1)


if __name__ == "__main__":
    main()
