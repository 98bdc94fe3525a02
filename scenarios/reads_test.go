package scenarios_test

import (
	"testing"
	"testing/synctest"

	"github.com/amqpsim/amqpsim/scenarios"
)

// Every library and cluster file replays over the wire as recorded
// however the server's reads cut what the clients write: split inside
// frames, or a step's publishes and settlements in one read. RabbitMQ's
// answers do not depend on where its reads end.
func TestLibraryWhateverTheReadBoundaries(t *testing.T) {
	var list []*scenarios.Scenario
	for _, fsys := range []func(*testing.T) []*scenarios.Scenario{library, cluster} {
		list = append(list, fsys(t)...)
	}
	for _, reads := range []scenarios.Reads{scenarios.ReadsSplit, scenarios.ReadsCoalesced} {
		t.Run(reads.String(), func(t *testing.T) {
			for _, s := range list {
				for _, v := range everyRelease(s) {
					var diff string
					synctest.Test(t, func(t *testing.T) {
						res, err := scenarios.ReplayWireWith(v, reads)
						if err != nil {
							t.Fatalf("%s on %s: %v", s.Path, v.Version, err)
						}
						diff = res.Diff()
					})
					if diff != "" {
						t.Errorf("%s on %s, reads %s:\n%s", s.Path, v.Version, reads, diff)
					}
				}
			}
		})
	}
}

func library(t *testing.T) []*scenarios.Scenario {
	list, err := scenarios.LoadFS(scenarios.Library(), ".")
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func cluster(t *testing.T) []*scenarios.Scenario {
	list, err := scenarios.LoadFS(scenarios.Cluster(), ".")
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// everyRelease returns a scenario once per release it is recorded on.
func everyRelease(s *scenarios.Scenario) []*scenarios.Scenario {
	rels := s.Releases()
	if len(rels) < 2 {
		return []*scenarios.Scenario{s}
	}
	var out []*scenarios.Scenario
	for _, r := range rels {
		v, _ := s.On(r)
		out = append(out, v)
	}
	return out
}
