package discord

// OnCaughtUp makes Run call f each time it has finished reading the
// reactions on pending messages after a connect. Set it before Run.
func (a *Adapter) OnCaughtUp(f func()) { a.caughtUp = f }
