# %% [markdown]
# # Reading a Prism Search ranking in Python
#
# Notebook-style (cells marked `# %%`: VS Code, Jupyter's jupytext, or plain
# `python3 ranking.py`). It lists the coordinator's experiments, loads one
# experiment's ranking into a pandas DataFrame, prints it, and saves a PNG of
# the best schedules' validation loss against the uniform baseline: per step,
# the mean over seeds of each one's loss minus the same seed's baseline loss,
# with its 95% interval.
#
# The coordinator, the token and TLS come from the same places as for the
# `prism` CLI: PRISM_COORDINATOR, PRISM_TOKEN or PRISM_TOKEN_FILE (else
# ./prism-data/admin.token, what `prism run` writes), PRISM_TLS_CA. Which
# experiment: PRISM_EXPERIMENT (default: the newest finished one); where the
# plot goes: PRISM_PLOT (default ranking.png).
#
#   PYTHONPATH=clients/python:build/clients/python/gen \
#     python3 clients/python/examples/ranking.py

# %%
import os

import pandas as pd

import prism_client

client = prism_client.connect()

# %% [markdown]
# ## The experiments

# %%
experiments = client.experiments()
print(experiments[["id", "name", "state", "completed", "total"]]
      .to_string(index=False))

# %% [markdown]
# ## One experiment's ranking
# `delta` is the mean paired difference in final validation loss against the
# uniform baseline trained with the same seed: negative is better.

# %%
if os.environ.get("PRISM_EXPERIMENT"):
    experiment_id = int(os.environ["PRISM_EXPERIMENT"])
else:
    done = experiments[experiments["state"] == "done"]
    if done.empty:
        raise SystemExit("no finished experiment yet: run `prism run` or "
                         "set PRISM_EXPERIMENT")
    experiment_id = int(done["id"].max())

ranking = client.ranking(experiment_id)
with pd.option_context("display.width", 120, "display.max_columns", 12):
    print(ranking[["rank", "schedule", "verdict", "delta", "delta_low",
                   "delta_high", "seeds", "speedup", "in_best_set"]]
          .to_string(index=False))

# %% [markdown]
# ## The best schedules' curves against the baseline
# Below the dashed line at 0 a schedule's loss is lower than the baseline's
# at that step; `raw=True` plots the losses themselves.

# %%
plot_path = os.environ.get("PRISM_PLOT", "ranking.png")
figure = client.plot_curves(experiment_id, top=3, path=plot_path)
print(f"saved {plot_path}")
