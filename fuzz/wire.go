package fuzz

import (
	"sync"
	"testing"
	"testing/synctest"

	"github.com/amqpsim/amqpsim/scenarios"
)

// WireReplay returns a Config.Wire that replays each recording through
// amqp091-go over the in-memory wire, in a synctest bubble of t's, one at
// a time.
func WireReplay(t *testing.T) func(*scenarios.Scenario, scenarios.Reads) (*scenarios.Result, error) {
	var mu sync.Mutex
	return func(s *scenarios.Scenario, reads scenarios.Reads) (*scenarios.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		var res *scenarios.Result
		var err error
		synctest.Test(t, func(*testing.T) { res, err = scenarios.ReplayWireWith(s, reads) })
		return res, err
	}
}
