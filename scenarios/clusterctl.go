package scenarios

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A real cluster is recorded on through a control command, such as
// "scripts/rabbitmq cluster" (RecordOptions.Cluster), which takes
//
//	CMD status             "N running URL NAME pid P" or "N stopped" per node,
//	                       and "partition handling MODE"
//	CMD ctl N ARGS...      rabbitmqctl ARGS on node N (the settling check runs
//	                       rabbitmqctl eval with it)
//	CMD stop-node N, kill-node N, start-node N, partition N, heal,
//	    pause-node N, resume-node N
//
// After each of the last, the recorder waits until the cluster has settled
// (clusterCtl.settle): every running node sees as running the running
// nodes of its side of a cut and no others, and every quorum queue of the
// run whose majority runs has its leader on a running node of the
// majority's side (the commands themselves return once a node is down, or
// has booted). Only then does the
// quiet window start, so that what an election or a node's boot brings is
// seen under the step that caused it, every time.

// DefaultPending is how long a recording on a cluster waits for a
// method's answer before it counts the method as pending (errPending):
// RabbitMQ answers some only after a timeout (30 s, 65 s).
const DefaultPending = 2 * time.Second

// clusterSettle bounds the wait for a cluster to settle after a step, and
// clusterGrace is the time left after it has, for what follows an
// election (held confirms, a backlog's deliveries) to arrive.
const (
	clusterSettle = 120 * time.Second
	clusterGrace  = time.Second
)

// clusterCtl drives a real cluster through its control command.
type clusterCtl struct {
	cmd      []string
	urls     []string
	names    []string
	handling string // the partition handling it was started with
	view     *clusterView
	pending  time.Duration
}

// clusterStatus is what the control command's status printed.
type clusterStatus struct {
	state    map[int]string // node → "running", "stopped", ...
	urls     map[int]string
	names    map[int]string
	handling string
}

// newClusterCtl reads the cluster's nodes through its control command and
// requires all of them to run.
func newClusterCtl(cmdline string, pending time.Duration) (*clusterCtl, error) {
	c := &clusterCtl{cmd: strings.Fields(cmdline), pending: pending}
	if len(c.cmd) == 0 {
		return nil, errors.New("no cluster control command")
	}
	if c.pending <= 0 {
		c.pending = DefaultPending
	}
	st, err := c.status()
	if err != nil {
		return nil, err
	}
	for n := 1; n <= len(st.state); n++ {
		if st.state[n] != "running" {
			return nil, fmt.Errorf("node %d of the cluster is %s: start the whole cluster first (%s start)", n, st.state[n], cmdline)
		}
		c.urls = append(c.urls, st.urls[n])
		c.names = append(c.names, st.names[n])
	}
	if len(c.urls) < 2 {
		return nil, fmt.Errorf("%s status shows %d node(s): not a cluster", cmdline, len(c.urls))
	}
	c.handling = st.handling
	c.view = newClusterView(len(c.urls))
	return c, nil
}

// run runs the control command with args and returns what it printed; a
// failure's error carries what it printed, stderr included.
func (c *clusterCtl) run(args ...string) (string, error) {
	out, err := exec.Command(c.cmd[0], append(slices.Clone(c.cmd[1:]), args...)...).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			out = append(out, exit.Stderr...)
		}
		return string(out), fmt.Errorf("%s %s: %v: %s", strings.Join(c.cmd, " "), strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// ctl is the rabbitmqctl command line of node n, for the steps that run
// rabbitmqctl (policies, users, alarms).
func (c *clusterCtl) ctl(n int) string {
	return strings.Join(append(slices.Clone(c.cmd), "ctl", strconv.Itoa(n)), " ")
}

// status runs the control command's status. It exits non-zero unless
// every node runs, so its output is read either way.
func (c *clusterCtl) status() (*clusterStatus, error) {
	out, err := c.run("status")
	st := &clusterStatus{state: map[int]string{}, urls: map[int]string{}, names: map[int]string{}}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		if n, err := strconv.Atoi(f[0]); err == nil {
			st.state[n] = f[1]
			if f[1] == "running" && len(f) >= 4 {
				st.urls[n], st.names[n] = f[2], f[3]
			}
			continue
		}
		if len(f) >= 3 && f[0] == "partition" && f[1] == "handling" {
			st.handling = f[2]
		}
	}
	if len(st.state) == 0 {
		if err == nil {
			err = fmt.Errorf("%s status printed no nodes", strings.Join(c.cmd, " "))
		}
		return nil, err
	}
	return st, nil
}

// listQueues lists the queues node n knows, with their type, leader and
// members.
func (c *clusterCtl) listQueues(n int) ([]queueRow, error) {
	out, err := c.run("ctl", strconv.Itoa(n), "-q", "list_queues", "name", "type", "leader", "members", "--formatter", "json")
	if err != nil {
		return nil, err
	}
	return parseQueueRows(out)
}

// namesOf returns the names of nodes, sorted.
func (c *clusterCtl) namesOf(nodes []int) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = c.names[n-1]
	}
	slices.Sort(out)
	return out
}

// fault runs a step that changes the cluster, then waits until it has
// settled. prefix names the run's queues.
func (c *clusterCtl) fault(op faultOp, prefix string) error {
	if _, err := c.run(op.args()...); err != nil {
		return err
	}
	op.change(c.view)
	if _, hang := op.(PauseNode); hang {
		// Nothing settles: the others see the node run until their
		// net_ticktime passes, and the settling check's calls to it
		// would wait for it.
		time.Sleep(clusterGrace)
		return nil
	}
	return c.settle(prefix)
}

// settle waits until the cluster is as the steps left it (see the top of
// this file), then lets clusterGrace pass.
func (c *clusterCtl) settle(prefix string) error {
	deadline := time.Now().Add(clusterSettle)
	for {
		why, err := c.unsettled(prefix)
		if err != nil {
			return err
		}
		if why == "" {
			time.Sleep(clusterGrace)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cluster has not settled within %v: %s", clusterSettle, why)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// viewEval is the Erlang expression the settling check runs on a node:
// for it and every node it is connected to, the running nodes that node
// sees ("sees NAME: NAME NAME ..."), and the leader node of every quorum
// queue as the metadata store has it ("leader VHOST NAME NODE"). One
// rabbitmqctl call, a few seconds on a loaded machine.
const viewEval = `R = fun(N) -> case catch erpc:call(N, rabbit_nodes, list_running, [], 10000) of ` +
	`L when is_list(L) -> lists:sort(L); _ -> [] end end, ` +
	`[io:format("sees ~ts:~ts~n", [N, [[" ", atom_to_list(X)] || X <- R(N)]]) || N <- lists:sort([node() | nodes()])], ` +
	`[io:format("leader ~ts ~ts ~ts~n", [element(2, amqqueue:get_name(Q)), element(4, amqqueue:get_name(Q)), ` +
	`case amqqueue:get_pid(Q) of {_, LN} -> LN; P when is_pid(P) -> node(P); _ -> none end]) ` +
	`|| Q <- rabbit_amqqueue:list(), amqqueue:get_type(Q) =:= rabbit_quorum_queue], ok.`

// nodeView is what viewEval printed.
type nodeView struct {
	sees    map[string][]string // node name → the running nodes it sees, sorted
	leaders map[string]string   // quorum queue (of the vhost "/") → its leader's node
}

// viewFrom runs viewEval on node n.
func (c *clusterCtl) viewFrom(n int) (*nodeView, error) {
	out, err := c.run("ctl", strconv.Itoa(n), "-q", "eval", viewEval)
	if err != nil {
		return nil, err
	}
	v := &nodeView{sees: map[string][]string{}, leaders: map[string]string{}}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && f[0] == "sees":
			v.sees[strings.TrimSuffix(f[1], ":")] = slices.Sorted(slices.Values(f[2:]))
		case len(f) == 4 && f[0] == "leader" && f[1] == "/":
			v.leaders[f[2]] = f[3]
		}
	}
	return v, nil
}

// unsettled says how the cluster differs from its view, or "": asked
// from the lowest running node of the majority's side (else the lowest
// running node), and from each running node cut off from it.
func (c *clusterCtl) unsettled(prefix string) (string, error) {
	m := c.view.majority()
	if m == 0 {
		m = c.view.firstUp()
	}
	askers := []int{m}
	for n := 1; n <= c.view.nodes; n++ {
		if c.view.answers(n) && !slices.Contains(c.view.side(m), n) && !slices.Contains(askers, c.firstAnswering(n)) {
			askers = append(askers, c.firstAnswering(n))
		}
	}
	for i, a := range askers {
		v, err := c.viewFrom(a)
		if err != nil {
			return "", err
		}
		for _, n := range c.view.running(a) {
			if c.view.paused[n] {
				continue // it answers nothing, and the others see it running until net_ticktime
			}
			want := c.namesOf(c.view.running(n))
			if got := v.sees[c.names[n-1]]; !slices.Equal(c.withoutPaused(got), c.withoutPaused(want)) {
				return fmt.Sprintf("%s sees %v running, not %v", c.names[n-1], got, want), nil
			}
		}
		if i > 0 || 2*len(c.view.running(a)) <= c.view.nodes {
			continue
		}
		side := c.namesOf(c.view.running(a))
		for q, leader := range v.leaders {
			if strings.HasPrefix(q, prefix) && !slices.Contains(side, leader) {
				return fmt.Sprintf("quorum queue %s has its leader on %s", q, leader), nil
			}
		}
	}
	return "", nil
}

// firstAnswering is the lowest node on node n's side that answers.
func (c *clusterCtl) firstAnswering(n int) int {
	for _, m := range c.view.running(n) {
		if c.view.answers(m) {
			return m
		}
	}
	return n
}

// withoutPaused leaves the names of hung nodes out of names: whether the
// others see one running depends on how long it has hung (net_ticktime).
func (c *clusterCtl) withoutPaused(names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(name string) bool {
		i := slices.Index(c.names, name)
		return i >= 0 && c.view.paused[i+1]
	})
}

// restore resumes hung nodes, heals a cut and starts every node the steps
// left down, so that the run's queues can be deleted and the next run
// finds the cluster whole.
func (c *clusterCtl) restore(prefix string) error {
	var ops []faultOp
	for n := 1; n <= c.view.nodes; n++ {
		if c.view.paused[n] {
			ops = append(ops, ResumeNode{Node: n})
		}
	}
	if len(c.view.cut) > 0 {
		ops = append(ops, Heal{})
	}
	for n := 1; n <= c.view.nodes; n++ {
		if !c.view.up(n) {
			ops = append(ops, StartNode{Node: n})
		}
	}
	for _, op := range ops {
		if err := c.fault(op, prefix); err != nil {
			return err
		}
	}
	return nil
}
