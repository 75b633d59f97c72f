// Package steptrace times the steps of a call on its way through the
// gateway, for `signoff bench --spawn`: the bench installs a Recorder for
// its unloaded phase and prints where a vote's time went, step by step,
// beside the floor it is measured against. The steps are marked where the
// work is done (the API, the store, the audit log); with no Recorder
// installed, which is always the case outside the bench, a mark costs one
// atomic load.
//
// It imports nothing from the module, so every layer may mark.
package steptrace
