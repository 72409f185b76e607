"""How Client.wait shows an experiment's progress: finished trials of all
(completed, failed, diverged, cancelled or stopped at a rung), with the
state and the running and queued trials beside.

  * in Jupyter (an IPython kernel): tqdm.auto's notebook bar;
  * on a terminal: a tqdm bar, redrawn in place;
  * anywhere else (a log file, a pipe, CI): one plain line each time the
    state or a count changes, never a carriage return;
  * progress=False: nothing.
Without tqdm (Debian's python3-tqdm, which deploy/setup.sh installs) bars
become plain lines.

Thread-safety: one reporter per wait() call.
"""

import sys


def finished_trials(counts):
    return (counts.completed + counts.failed + counts.diverged +
            counts.cancelled + counts.stopped_at_rung)


def _state_name(experiment):
    return {1: "active", 2: "paused", 3: "cancelled", 4: "done"}.get(
        experiment.state, "unknown")


def status_text(experiment):
    """"active, 2 running, 8 queued": what the bar shows beside its count."""
    c = experiment.counts
    return (f"{_state_name(experiment)}, {c.leased + c.running} running, "
            f"{c.queued} queued")


class Silent:
    def update(self, experiment):
        pass

    def say(self, line):
        pass

    def close(self):
        pass


class Lines:
    """One line per change: "experiment 3: active, 5/15 trials finished,
    2 running, 8 queued"."""

    def __init__(self, file, experiment_id):
        self._file = file
        self._id = experiment_id
        self._last = None

    def update(self, experiment):
        c = experiment.counts
        line = (f"experiment {self._id}: {_state_name(experiment)}, "
                f"{finished_trials(c)}/{c.total} trials finished, "
                f"{c.leased + c.running} running, {c.queued} queued")
        if line != self._last:
            self.say(line)
            self._last = line

    def say(self, line):
        print(line, file=self._file, flush=True)

    def close(self):
        pass


class Bar:
    """A tqdm bar of finished trials out of all (the total grows when seeds
    or schedules are added). Made at the first update, starting from the
    trials already finished, so its rate and time left count only what
    finishes while it waits."""

    def __init__(self, tqdm_class, file, experiment_id):
        self._file = file
        self._make = lambda finished, total: tqdm_class(
            total=total, initial=finished, desc=f"experiment {experiment_id}",
            unit="trial", file=file, dynamic_ncols=True, leave=True,
            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} trials "
                       "[{elapsed}<{remaining}{postfix}]")
        self._bar = None

    def update(self, experiment):
        c = experiment.counts
        finished = finished_trials(c)
        if self._bar is None:
            self._bar = self._make(finished, c.total)
        self._bar.total = c.total
        self._bar.set_postfix_str(status_text(experiment), refresh=False)
        self._bar.update(finished - self._bar.n)
        self._bar.refresh()  # a new state or count beside, n unchanged

    def say(self, line):
        if self._bar is None:
            print(line, file=self._file, flush=True)
        else:
            self._bar.write(line, file=self._bar.fp)

    def close(self):
        if self._bar is not None:
            self._bar.close()


def _in_notebook():
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def reporter(progress, file, experiment_id):
    """The reporter for wait(progress=..., file=...): see the module
    docstring. `file` None is sys.stderr."""
    if not progress:
        return Silent()
    file = sys.stderr if file is None else file
    notebook = _in_notebook()
    terminal = hasattr(file, "isatty") and file.isatty()
    if notebook or terminal:
        try:
            if notebook:
                from tqdm.auto import tqdm
            else:
                from tqdm import tqdm
            return Bar(tqdm, file, experiment_id)
        except ImportError:
            pass
    return Lines(file, experiment_id)
