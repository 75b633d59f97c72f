package httpapi

// IdleConns is how many connections given back to l have had no request
// read on them yet (l.Close closes them).
func (l *Listener) IdleConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.idle)
}
