package sim_test

import "testing"

// The conversations that check shared/seeds' claims are library scenarios
// (scenarios/library/seed*.txt, recorded on RabbitMQ); what stays here is
// the Go API's bound that no wire frame can carry.

// 003: prefetch-count is 16 bits: 65,535 is the maximum.
func TestSeed003PrefetchCountMax65535(t *testing.T) {
	e := newEnv(t)
	e.must(e.ch.Qos(65535, 0, false))
	if err := e.ch.Qos(65536, 0, false); err == nil {
		t.Error("65536 accepted")
	}
}

