package redis

// SetMaxDrafts lowers the bound on drafts for a test; the returned func
// puts it back.
func SetMaxDrafts(n int64) func() {
	old := maxDrafts
	maxDrafts = n
	return func() { maxDrafts = old }
}
