package sim

// RouteStates is the topic trie states the broker's last route visited,
// for the benchmarks of package sim_test.
func RouteStates(b *Broker) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.router.walk.states
}
