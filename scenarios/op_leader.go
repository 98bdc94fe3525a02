package scenarios

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/amqpsim/amqpsim/sim"
)

// Leader shows where a queue lives on a cluster: "leader orders". The
// result line is "orders leader=NODE members=NODE,NODE,..." (members in
// name order; a classic queue's only member is its home node), or "orders
// not found". On a real cluster it asks a running node (rabbitmqctl
// list_queues name leader members), which lists queues that exist on
// nodes it can reach.
type Leader struct{ Queue string }

func init() {
	register(&verb{name: "leader", usage: "leader QUEUE", minPos: 1, maxPos: 1, what: "the queue's leader and members",
		build: func(a *argSet) (Op, error) { return Leader{Queue: a.str(0)}, nil }})
}

func (Leader) isOp()        {}
func (Leader) clusterStep() {}
func (Leader) silent()      {}

func (Leader) nodes() []int { return nil }

// String returns the Leader step line.
func (o Leader) String() string { return line("leader", word(o.Queue)) }

// leaderInfo is where a queue is.
type leaderInfo struct {
	found   bool
	leader  string
	members []string
}

func (o Leader) run(r *runner, _ *rchan) ([]string, reply, error) {
	li, err := r.d.leader(o.Queue)
	if err != nil {
		return nil, reply{}, err
	}
	if !li.found {
		return []string{word(o.Queue) + " not found"}, reply{}, nil
	}
	m := slices.Sorted(slices.Values(li.members))
	return []string{fmt.Sprintf("%s leader=%s members=%s", word(o.Queue), li.leader, strings.Join(m, ","))}, reply{}, nil
}

// simLeader reads a queue's leader and members off a simulator.
func simLeader(b *sim.Broker, q string) (leaderInfo, error) {
	leader, members, err := b.QueueLeader("/", q)
	if errors.Is(err, sim.ErrNoQueue) {
		return leaderInfo{}, nil
	}
	if err != nil {
		return leaderInfo{}, err
	}
	return leaderInfo{found: true, leader: leader, members: members}, nil
}

func (d *simDriver) leader(q string) (leaderInfo, error) { return simLeader(d.b, q) }

func (d *simDriver) classicHomes(queues []string) (map[string]int, error) {
	return simClassicHomes(d.b, queues), nil
}

// simClassicHomes returns the home node of each of queues that is a
// classic queue of a simulator.
func simClassicHomes(b *sim.Broker, queues []string) map[string]int {
	out := map[string]int{}
	for _, q := range queues {
		leader, _, err := b.QueueLeader("/", q)
		if err != nil {
			continue
		}
		if d, err := b.QueueDetails("/", q); err != nil || d.Type != "classic" {
			continue
		}
		for _, n := range b.Nodes() {
			if n.Name == leader {
				out[q] = n.Number
			}
		}
	}
	return out
}

// classicHomes asks the simulator behind the wire, or a running node of
// a real cluster (rabbitmqctl list_queues: a classic queue's leader is
// its home).
func (d *amqpDriver) classicHomes(queues []string) (map[string]int, error) {
	if d.sim != nil {
		return simClassicHomes(d.sim.b, queues), nil
	}
	if d.cluster == nil {
		return nil, nil
	}
	rows, err := d.cluster.listQueues(d.cluster.view.firstUp())
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, q := range queues {
		for _, r := range rows {
			if r.Name != d.p(q) || r.Type != "classic" {
				continue
			}
			if n := slices.Index(d.cluster.names, r.Leader); n >= 0 {
				out[q] = n + 1
			}
		}
	}
	return out, nil
}

// leader reads a queue's leader and members: off the simulator behind the
// wire, or from a running node of a real cluster with rabbitmqctl.
func (d *amqpDriver) leader(q string) (leaderInfo, error) {
	if d.sim != nil {
		return simLeader(d.sim.b, q)
	}
	if d.cluster == nil {
		return leaderInfo{}, errors.New("leader: a step for a cluster: record the scenario with a cluster (amqpsim record --cluster)")
	}
	rows, err := d.cluster.listQueues(d.cluster.view.firstUp())
	if err != nil {
		return leaderInfo{}, err
	}
	for _, r := range rows {
		if r.Name == d.p(q) {
			return leaderInfo{found: true, leader: r.Leader, members: r.members()}, nil
		}
	}
	return leaderInfo{}, nil
}

// queueRow is one queue of rabbitmqctl list_queues name type leader
// members --formatter json.
type queueRow struct {
	Name    string          `json:"name"`
	Type    string          `json:"type"`
	Leader  string          `json:"leader"`
	Members json.RawMessage `json:"members"`
}

// members reads the members column: a list of node names, or one name.
func (r queueRow) members() []string {
	var list []string
	if json.Unmarshal(r.Members, &list) == nil {
		return list
	}
	var one string
	if json.Unmarshal(r.Members, &one) == nil && one != "" {
		return []string{one}
	}
	return nil
}

// parseQueueRows reads list_queues' JSON output.
func parseQueueRows(out string) ([]queueRow, error) {
	var rows []queueRow
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rows); err != nil {
		return nil, fmt.Errorf("reading list_queues: %w: %s", err, strconv.Quote(out))
	}
	return rows, nil
}
