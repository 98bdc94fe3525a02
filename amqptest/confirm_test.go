package amqptest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// The trial of amqpsim confirm: a worker with a planted bug fails under
// a fault, and its report runs on the real broker of $AMQP_URL. Run as it
// is, RabbitMQ answers every step as the simulator did: the failure is
// the worker's. Run on a simulator with one of its release's rules
// planted wrong (a profile with a change undone or brought forward),
// RabbitMQ answers differently at the step that rule decides: the
// simulator's fault.

// brokerVersion returns $AMQP_URL and the release of its broker, or
// skips the test.
func brokerVersion(t *testing.T) (string, sim.Version) {
	t.Helper()
	url := os.Getenv("AMQP_URL")
	if url == "" {
		t.Skip("needs a RabbitMQ broker: set AMQP_URL=amqp://guest:guest@127.0.0.1:5672/ to run")
	}
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	version, _ := conn.Properties["version"].(string)
	v, err := sim.ParseVersion(version)
	if err != nil {
		t.Fatalf("the broker's version %q: %v", version, err)
	}
	return url, v
}

// parkingJobs declares jobs, whose rejects go to jobs.parked, and
// publishes six persistent jobs, one bad.
func parkingJobs(srv *Server) error {
	b := srv.Broker()
	conn := b.Connect("setup")
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if _, err := ch.QueueDeclare("jobs.parked", sim.QueueOptions{Durable: true}); err != nil {
		return err
	}
	args := sim.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "jobs.parked"}
	if _, err := ch.QueueDeclare("jobs", sim.QueueOptions{Durable: true, Args: args}); err != nil {
		return err
	}
	for i := range 6 {
		body := fmt.Sprintf("job-%d", i)
		if i == 4 {
			body = "bad-4"
		}
		if err := b.Publish("/", "", "jobs", sim.Message{Properties: protocol.Properties{DeliveryMode: 2}, Body: []byte(body)}); err != nil {
			return err
		}
	}
	return nil
}

// parkingWorker consumes jobs one at a time, rejects what it cannot
// handle, which jobs.parked takes, and moves each parked job to its own
// log at once, with basic.get on a channel of its own. Its planted bug: it
// takes a redelivered job for a poison message and rejects it too, so
// that a good job is parked after a fault requeues it.
//
// (With a consumer of jobs.parked on the jobs channel instead, the
// delivery tags would show a divergence amqpsim confirm found: after a
// reject, RabbitMQ 3.10.8, 4.0.5 and 4.3.6 push the queue's next delivery
// before the dead-lettered message reaches the other consumer, the
// simulator the other way round.)
func parkingWorker(ctx context.Context, srv *Server) error {
	parked := map[string]bool{}
	for ctx.Err() == nil {
		func() {
			conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial, Properties: amqp.Table{"connection_name": "worker"}})
			if err != nil {
				return
			}
			defer conn.Close()
			ch, err := conn.Channel()
			if err != nil || ch.Qos(1, 0, false) != nil {
				return
			}
			jobs, err := ch.Consume("jobs", "jobs", false, false, false, false, nil)
			if err != nil {
				return
			}
			audit, err := conn.Channel()
			if err != nil {
				return
			}
			for {
				select {
				case <-ctx.Done():
					return
				case d, ok := <-jobs:
					if !ok {
						return
					}
					if !strings.HasPrefix(string(d.Body), "bad") && !d.Redelivered {
						d.Ack(false)
						continue
					}
					if d.Reject(false) != nil {
						return
					}
					m, ok, err := audit.Get("jobs.parked", true)
					if err != nil {
						return
					}
					if ok {
						parked[string(m.Body)] = true
					}
				}
			}
		}()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	for body := range parked {
		if !strings.HasPrefix(body, "bad") {
			return fmt.Errorf("%s was parked, but it was a good job", body)
		}
	}
	return nil
}

// dropAfterTwo drops the worker's connection after its second delivery.
var dropAfterTwo = Schedule{{AfterDeliveries: 2, Kind: FaultDrop}}

// trialReport runs the worker under sched on a simulator of cfg, and
// returns its failure report.
func trialReport(t *testing.T, cfg sim.Config, sched Schedule) *scenarios.Scenario {
	t.Helper()
	t.Chdir(t.TempDir())
	dir := t.TempDir()
	tb := failing(t, "TestTrial", parkingWorker, Setup(parkingJobs), Drained("jobs", "jobs.parked"), Reruns(3),
		Faults(rapid.Just(sched)), ServerOptions(WithConfig(cfg), WithFailureReport(dir)))
	path := filepath.Join(dir, "TestTrial.txt")
	if !strings.Contains(tb.output(), "amqpsim confirm "+path) {
		t.Errorf("the failure does not print the confirm command:\n%s", tb.output())
	}
	s, err := scenarios.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConfirmPlantedBug: the worker's bug parks a good job; RabbitMQ
// answers the report's every step as the simulator did.
func TestConfirmPlantedBug(t *testing.T) {
	url, v := brokerVersion(t)
	report := trialReport(t, sim.Config{Version: v}, dropAfterTwo)
	verdict, err := scenarios.ConfirmReport(report, scenarios.ConfirmOptions{RecordOptions: scenarios.RecordOptions{URL: url}})
	if err != nil {
		t.Fatal(err)
	}
	// At least one run answers every step as the simulator did; on a
	// loaded machine another may see a frame after the quiet window.
	if verdict.Outcome != scenarios.Agrees {
		t.Errorf("the verdict:\n%s\nthe report:\n%s", verdict, report.Format())
	}
	if !strings.HasPrefix(verdict.String(), "RabbitMQ "+v.String()) || !strings.Contains(verdict.String(), "answers the same: the failure is in your code") {
		t.Errorf("the verdict says:\n%s", verdict)
	}
}

// TestConfirmPlantedDivergence: the same run on a simulator whose profile
// has the broker's rule for a rejected message's redelivered flag the
// other way (the 4.3 change "classic delivery-count"): RabbitMQ answers
// differently, in every run, where the worker gets the first parked job.
func TestConfirmPlantedDivergence(t *testing.T) {
	url, v := brokerVersion(t)
	p := plantedProfile(v)
	report := trialReport(t, sim.Config{Version: v, Profile: &p}, dropAfterTwo)
	verdict, err := scenarios.ConfirmReport(report, scenarios.ConfirmOptions{RecordOptions: scenarios.RecordOptions{URL: url}})
	if err != nil {
		t.Fatal(err)
	}
	checkPlantedDivergence(t, v, report, verdict)
}

// plantedProfile is release v's profile with its rule for the
// redelivered flag of a rejected, dead-lettered message the other way:
// the 4.3 change "classic delivery-count" undone on 4.3, brought forward
// to an older release.
func plantedProfile(v sim.Version) sim.Profile {
	other := sim.V4_3
	if v == sim.V4_3 {
		other = sim.V4_0
	}
	p := v.Profile()
	for _, c := range sim.Changes() {
		if c.Name == "classic delivery-count" {
			p = c.Undo(p, other.Profile())
		}
	}
	return p
}

// checkPlantedDivergence checks that the verdict is the planted
// divergence, at the get of the first parked job.
func checkPlantedDivergence(t *testing.T, v sim.Version, report *scenarios.Scenario, verdict *scenarios.Verdict) {
	t.Helper()
	if verdict.Outcome != scenarios.Diverges || verdict.Step < 0 {
		t.Fatalf("the verdict:\n%s\nthe report:\n%s", verdict, report.Format())
	}
	step := report.Steps[verdict.Step]
	simSays, brokerSays := strings.Join(verdict.Sim, "\n"), strings.Join(verdict.Answers[0], "\n")
	if !strings.HasPrefix(step.Text, "get ") || !strings.Contains(simSays, "get-ok ") ||
		strings.Contains(simSays, "redelivered") == strings.Contains(brokerSays, "redelivered") {
		t.Errorf("the divergence is not the planted one:\n%s", verdict)
	}
	for _, want := range []string{"answers differently at step ", "this is a simulator divergence", "the simulator answered",
		" answered", "RabbitMQ " + v.String(), "File the divergence"} {
		if !strings.Contains(verdict.String(), want) {
			t.Errorf("the verdict lacks %q:\n%s", want, verdict)
		}
	}
}

// TestConfirmOnCluster: the trial on a simulated cluster of three nodes,
// whose schedule also stops a node, confirmed on the real cluster of
// $AMQP_CLUSTER (4.3.6; hold /tmp/amqpsim-cluster.lock while it runs): the
// planted bug, RabbitMQ agreeing; the planted rule, RabbitMQ answering
// differently at the get of the parked job. The report's node names are
// the simulator's; confirm runs them as the cluster's. It takes about 10
// minutes (each run stops and starts a node).
func TestConfirmOnCluster(t *testing.T) {
	cmd := os.Getenv("AMQP_CLUSTER")
	switch cmd {
	case "":
		t.Skip(`needs a real 3-node RabbitMQ cluster: start it (scripts/rabbitmq cluster start) and set AMQP_CLUSTER=1, or AMQP_CLUSTER="CMD" for another control command`)
	case "1":
		script, err := filepath.Abs("../scripts/rabbitmq")
		if err != nil {
			t.Fatal(err)
		}
		cmd = script + " cluster"
	}
	sched := Schedule{{AfterDeliveries: 1, Kind: FaultStopNode, Node: 3, Downtime: 2 * time.Second}, {AfterDeliveries: 2, Kind: FaultDrop}}
	o := scenarios.ConfirmOptions{Runs: 2, RecordOptions: scenarios.RecordOptions{Cluster: cmd}}
	t.Run("agrees", func(t *testing.T) {
		report := trialReport(t, sim.Config{Nodes: 3}, sched)
		if !strings.Contains(string(report.Format()), "\nstop-node 3\n") {
			t.Fatalf("the report has no stop-node:\n%s", report.Format())
		}
		verdict, err := scenarios.ConfirmReport(report, o)
		if err != nil {
			t.Fatal(err)
		}
		if verdict.Outcome != scenarios.Agrees {
			t.Errorf("the verdict:\n%s\nthe report:\n%s", verdict, report.Format())
		}
	})
	t.Run("diverges", func(t *testing.T) {
		p := plantedProfile(sim.V4_3)
		report := trialReport(t, sim.Config{Nodes: 3, Profile: &p}, sched)
		verdict, err := scenarios.ConfirmReport(report, o)
		if err != nil {
			t.Fatal(err)
		}
		checkPlantedDivergence(t, sim.V4_3, report, verdict)
	})
}
