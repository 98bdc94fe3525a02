package scenarios

import (
	"github.com/amqpsim/amqpsim/sim"
)

// Heal ends a partition: "heal". The nodes see each other again without a
// restart: nothing is closed or redelivered; held confirms and deliveries
// flow. On a real cluster it runs the cluster's heal command and waits
// until the cluster has settled.
type Heal struct{}

func init() {
	register(&verb{name: "heal", usage: "heal", minPos: 0, maxPos: 0, what: "healing a partition",
		build: func(a *argSet) (Op, error) { return Heal{}, nil }})
}

func (Heal) isOp()        {}
func (Heal) clusterStep() {}

// String returns the Heal step line.
func (Heal) String() string { return "heal" }

func (Heal) nodes() []int               { return nil }
func (Heal) runSim(b *sim.Broker) error { b.Heal(); return nil }
func (Heal) args() []string             { return []string{"heal"} }
func (Heal) change(v *clusterView)      { v.cut = nil }

func (o Heal) run(r *runner, _ *rchan) ([]string, reply, error) {
	return nil, reply{}, r.d.fault(o)
}
