// Which experiments can still change, so pages hold an event stream open
// only for those (each open stream occupies a coordinator HTTP thread).

const kLiveStates = new Set(['EXPERIMENT_ACTIVE', 'EXPERIMENT_PAUSED']);

export function isLive(experiment) {
  return Boolean(experiment) && kLiveStates.has(experiment.state);
}
