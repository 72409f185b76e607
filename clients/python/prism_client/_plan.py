"""Plan: what a submit or an extend queued, or would queue (a dry run), and
what it costs (prism.v1.PlanEstimate), for people.

Client.plan, submit, add_seeds and train_suggestions return one. Its repr
is a small table: the headline, the estimate's rows (only the fields the
coordinator set: a coordinator that does not estimate a field leaves it
out), its warnings and the limits line. The raw response stays in
`response` for anything not shown.

Thread-safety: a Plan is a plain value.
"""

import dataclasses


def _count(value):
    return f"{int(value):,}"


def _amount(value):
    """1234 -> "1,234"; 3.2e12 -> "3.20e+12": readable at any size."""
    if abs(value) >= 1e9:
        return f"{value:.2e}"
    return f"{value:,.0f}"


def _share(value):
    return f"{100 * value:.1f}% of the grid"


def _hours(value):
    """Worker time in the unit that reads, as `prism plan` prints it: 12.5
    -> "12.50 worker-hours", 0.078 -> "4.7 worker-minutes", 0.0075 -> "27
    worker-seconds"."""
    if value >= 1:
        return f"{value:,.2f} worker-hours"
    if value * 60 >= 1:
        return f"{value * 60:.2g} worker-minutes"
    return f"{value * 3600:.2g} worker-seconds"


def _text(value):
    return str(value)


# The estimate's rows, in the order shown: (PlanEstimate field, label, cell).
# A field the coordinator sets that is not listed here is shown after them
# under its own name, so a newer coordinator's fields are never hidden.
_ESTIMATE_ROWS = [
    ("schedules", "schedules (baseline included)", _count),
    ("seeds", "seeds per schedule", _count),
    ("trials", "trials queued", _count),
    ("steps", "steps, expected", _amount),
    ("max_steps", "steps, at most", _amount),
    ("grid_steps", "steps of the grid", _amount),
    ("expected_share", "expected share", _share),
    ("max_share", "largest share", _share),
    ("share_source", "share from", _text),
    ("tokens_per_step", "tokens per step", _count),
    ("tokens", "tokens, expected", _amount),
    ("max_tokens", "tokens, at most", _amount),
    ("corpus_tokens", "corpus tokens", _amount),
    ("parameters", "parameters", _amount),
    ("flops_per_token", "FLOPs per token", _amount),
    ("flops", "FLOPs, expected", _amount),
    ("tokens_per_second", "tokens/s per worker", _amount),
    ("throughput_source", "throughput from", _text),
    ("worker_hours", "worker time, expected", _hours),
    ("max_worker_hours", "worker time, at most", _hours),
]


def estimate_dict(estimate):
    """The fields of a prism.v1.PlanEstimate the coordinator set (non-zero,
    non-empty), by field name; `warnings` as a list."""
    out = {}
    for field, value in estimate.ListFields():
        out[field.name] = list(value) if field.label == field.LABEL_REPEATED \
            else value
    return out


def headroom_dict(headroom):
    """Every field of a prism.v1.Headroom, by name (0: no limit)."""
    return {f.name: getattr(headroom, f.name)
            for f in headroom.DESCRIPTOR.fields}


def estimate_rows(estimate):
    """[(label, cell)] for the set fields of an estimate_dict, warnings left
    out."""
    rows, shown = [], {"warnings"}
    for field, label, cell in _ESTIMATE_ROWS:
        shown.add(field)
        if field in estimate:
            rows.append((label, cell(estimate[field])))
    for field, value in estimate.items():
        if field not in shown:
            rows.append((field, str(value)))
    return rows


def headroom_line(h):
    """As `prism submit` prints it (cli/views/plan.cc HeadroomLine)."""
    def of(value, limit):
        return f"{value} of {limit}" if limit > 0 else f"{value} (no limit)"
    return (f"limits: {of(h['trials'], h['max_trials_per_experiment'])} "
            f"trials per experiment; your queued trials "
            f"{of(h['queued_trials'], h['max_queued_trials'])}; your active "
            "experiments "
            f"{of(h['active_experiments'], h['max_active_experiments'])}; "
            f"spec {h['spec_bytes'] / 1024:.1f} of "
            f"{h['max_stored_spec_bytes'] / 1024:.1f} KiB")


@dataclasses.dataclass(repr=False)
class Plan:
    """What a submit or an extend queued (dry_run False) or would queue
    (dry_run True), and its cost.

    experiment: the prism.v1.Experiment as stored after (a dry-run submit:
      id 0 with the resolved spec; a dry-run extend: as it is).
    action: "submit" or "extend".
    trials_created: the trials queued (or that would be).
    trials_reused: an extend's trials that count toward the result (None for
      a submit).
    seeds_added, schedules_added: an extend's (empty for a submit).
    estimate: PlanEstimate's set fields by name (estimate_dict).
    headroom: the caller against the coordinator's limits (headroom_dict).
    response: the prism.v1.SubmitResponse or ExtendResponse.
    """
    experiment: object
    action: str
    dry_run: bool
    trials_created: int
    trials_reused: object
    seeds_added: list
    schedules_added: list
    estimate: dict
    headroom: dict
    response: object

    @property
    def id(self):
        """The experiment's id (0 for a dry-run submit)."""
        return self.experiment.id

    @property
    def warnings(self):
        return list(self.estimate.get("warnings", []))

    def headline(self):
        e = self.experiment
        name = f" ({e.name})" if e.name else ""
        if self.action == "submit":
            seeds = len(e.spec.seeds)
            what = (f"{self.trials_created} trials{name}, "
                    f"{seeds} seed{'' if seeds == 1 else 's'}, "
                    f"{e.spec.budget.steps} steps each")
            if self.dry_run:
                return f"plan: {what}; nothing submitted (a dry run)"
            return f"experiment {e.id} submitted: {what}"
        added = []
        if self.seeds_added:
            added.append("seeds " + ", ".join(map(str, self.seeds_added)))
        if self.schedules_added:
            added.append("schedules " + ", ".join(self.schedules_added))
        what = (f"{' and '.join(added) or 'nothing'}: {self.trials_created} "
                f"new trials, {self.trials_reused} reused")
        if self.dry_run:
            return (f"experiment {e.id} would get {what}; nothing added (a "
                    "dry run)")
        return f"experiment {e.id} got {what}"

    def table(self):
        """The headline, the estimate's rows, warnings and limits, one per
        line."""
        lines = [self.headline()]
        rows = estimate_rows(self.estimate)
        width = max((len(label) for label, _ in rows), default=0)
        lines += [f"  {label:<{width}}  {cell}" for label, cell in rows]
        lines += [f"  warning: {w}" for w in self.warnings]
        lines.append(headroom_line(self.headroom))
        return "\n".join(lines)

    def __repr__(self):
        return self.table()

    __str__ = __repr__


def plan_from(response, action, dry_run):
    """A Plan from a prism.v1.SubmitResponse (action "submit") or an
    ExtendResponse ("extend")."""
    extend = action == "extend"
    return Plan(
        experiment=response.experiment,
        action=action,
        dry_run=dry_run,
        trials_created=response.trials_created,
        trials_reused=response.trials_reused if extend else None,
        seeds_added=list(response.seeds_added) if extend else [],
        schedules_added=list(response.schedules_added) if extend else [],
        estimate=estimate_dict(response.plan),
        headroom=headroom_dict(response.headroom),
        response=response)
