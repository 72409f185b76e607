# %% [markdown]
# # Steering a Prism Search experiment from Python
#
# Notebook-style (cells marked `# %%`: VS Code, Jupyter's jupytext, or plain
# `python3 steer.py`). End to end: plan a spec (what it queues and costs),
# submit it, wait with a progress bar, add a seed to every schedule (every
# trial already trained is reused), compare the best schedule with the
# baseline, ask the surrogate for untried schedules and train two of them,
# then plot the paired deltas against the uniform baseline.
#
# The coordinator, the token and TLS come from the same places as for the
# `prism` CLI: PRISM_COORDINATOR, PRISM_TOKEN or PRISM_TOKEN_FILE (else
# ./prism-data/admin.token, what `prism run` writes), PRISM_TLS_CA. The spec:
# PRISM_SPEC, a .textproto file (default: SPEC below, six schedules of the
# tiny preset on the demo corpus, 2 seeds: 14 short trials); where the plot
# goes: PRISM_PLOT (default steer.png). It needs a worker:
#
#   prism worker --coordinator 127.0.0.1:50051 \
#       --token-file prism-data/admin.token &
#   PYTHONPATH=clients/python:build/clients/python/gen \
#     python3 clients/python/examples/steer.py

# %%
import os

import pandas as pd

import prism_client

SPEC = """
name: "steer: tiny, six schedules"
model { preset: "tiny" }
budget { steps: 200 }
schedules: ["1x2,4x4", "2x2,4x4", "1x3,4x3", "2x3,4x3", "2x4,4x2",
            "1x2,2x2,4x2"]
seeds: [1, 2]
"""

client = prism_client.connect()
spec = os.environ.get("PRISM_SPEC") or SPEC
columns = ["rank", "schedule", "verdict", "delta", "delta_low", "delta_high",
           "paired_seeds", "speedup"]


def show(frame):
    with pd.option_context("display.width", 120, "display.max_columns", 12):
        print(frame.to_string(index=False))


# %% [markdown]
# ## What it would cost
# A dry run: every limit and quota is checked, nothing is stored.

# %%
plan = client.plan(spec)
print(plan)

# %% [markdown]
# ## Submit and wait
# `wait` draws a progress bar on a terminal or in Jupyter (plain lines in a
# log); Ctrl-C stops waiting, never the experiment.

# %%
submitted = client.submit(spec)
print(submitted)
ranking = client.wait(submitted)
show(ranking[columns])

# %% [markdown]
# ## One more seed for every schedule
# Only the new (schedule, seed) pairs are trained; the experiment is active
# again until they finish.

# %%
added = client.add_seeds(submitted, count=1)
print(added)
ranking = client.wait(submitted)
show(ranking[columns])

# %% [markdown]
# ## The best schedule against the baseline
# `delta` is b - a in final validation loss, paired by seed: negative means
# b is better.

# %%
baseline = ranking.loc[ranking["is_baseline"], "schedule"].iloc[0]
best = ranking.loc[~ranking["is_baseline"], "schedule"].iloc[0]
comparison = client.compare(submitted, baseline, best)
print(f"{best} vs {baseline}: delta {comparison['delta']:+.4f} "
      f"[{comparison['delta_low']:+.4f}, {comparison['delta_high']:+.4f}] "
      f"over {comparison['seeds']} seeds, {comparison['verdict']} "
      f"(p {comparison['p_value']:.3f})")

# %% [markdown]
# ## What to try next
# A surrogate fitted on the finished schedules predicts each untried one's
# paired delta; train the two it likes best on every seed.

# %%
suggestions = client.suggest(submitted, 5)
show(suggestions[["schedule", "predicted_delta", "uncertainty"]])
trained = client.train_suggestions(submitted, 2)
print(trained)
ranking = client.wait(submitted)
show(ranking[columns])

# %% [markdown]
# ## The curves
# Per step, each schedule's loss minus the same seed's baseline loss, the
# mean over seeds with its 95% t interval; the dashed line is the baseline.

# %%
plot_path = os.environ.get("PRISM_PLOT", "steer.png")
figure = client.plot_curves(submitted, top=3, path=plot_path)
print(f"saved {plot_path}")
