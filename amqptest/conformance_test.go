package amqptest_test

// The conformance suite (issue 3): short client programs, run through the
// real client (github.com/rabbitmq/amqp091-go) against the simulator and
// against RabbitMQ, whose observations must be equal.
//
// Each case (conformance_cases_test.go) is a func(t, env) that drives
// connections and channels through the env, which records what the client
// observes into an Outcome: what each consumer was pushed (body, delivery
// tag, redelivered, and the step after which it arrived), the results of
// synchronous methods in program order (get-ok with message_count,
// get-empty, declare-ok counts, purge and delete counts, the error a call
// failed with), which connections and channels the server closed and with
// what code and text (NotifyClose on both, so a hard error shows on the
// connection and a soft one on the channel only), broker-sent basic.cancel,
// basic.return, and publisher confirms as sets of acked and nacked tags
// (RabbitMQ coalesces multiple=true acks at will, so only the sets compare).
//
// A case advances in steps: env.Step waits for quiescence (a round trip on
// every connection and channel, then no frame read or written and nothing
// observed for 150 ms against the broker, 50 ms against the simulator) and
// names what follows, so that every delivery, close and cancel is
// attributed to the step after which it arrived. A case also steps before
// a declare-ok, whose counts RabbitMQ takes out of turn (the queue process
// serves its stat call at priority 7, ahead of publishes, acks and
// requeues still in its mailbox). env.Wait lets time pass for the TTL and
// queue-expiry cases: Broker().Advance on the simulator, a real sleep on
// the broker, each followed by quiescence.
//
// Every queue and exchange name is made unique per run (env.Q, env.X) and
// mapped back to the stable name in everything recorded, so outcomes from
// different runs and brokers compare; server-generated names become
// "amq.gen-*" and "amq.ctag-*".
//
// # Golden files
//
// The expected outcome of every case is recorded from RabbitMQ 3.10.8 in
// testdata/conformance/<case>.json. Without AMQP_URL the suite runs against
// the simulator alone and compares with these files. With AMQP_URL set (as
// .ci/run does when the local broker answers), each case also runs against
// that broker, and the suite compares simulator against broker and broker
// against the golden file, so a change of broker behaviour is noticed. To
// re-record the golden files from the broker:
//
//	AMQP_URL=amqp://guest:guest@127.0.0.1:5672/ go test ./amqptest/ -run Conformance -update-conformance
//
// (or AMQPSIM_UPDATE_CONFORMANCE=1 instead of the flag). Against a broker
// the cases create only uniquely named queues and exchanges, delete them
// afterwards, and change no broker setting. Consumer timeouts are not
// covered: RabbitMQ's 30-minute default would need a broker setting changed.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
)

var updateConformance = flag.Bool("update-conformance", false,
	"re-record testdata/conformance/*.json from the broker at AMQP_URL")

const conformanceDir = "testdata/conformance"

// Outcome is what a case observed, with stable names.
type Outcome struct {
	// Log holds the results of the case's calls in program order.
	Log []string `json:"log,omitempty"`
	// Consumers holds, per consumer tag, what the consumer was pushed.
	Consumers map[string][]Delivery `json:"consumers,omitempty"`
	// Closed holds, per connection or channel label, the server's close.
	Closed map[string]Closed `json:"closed,omitempty"`
	// Cancels holds, per channel label, the broker's basic.cancel.
	Cancels map[string][]string `json:"cancels,omitempty"`
	// Returns holds, per channel label, the basic.return messages.
	Returns map[string][]Return `json:"returns,omitempty"`
	// Confirms holds, per channel label, the confirmed publish tags.
	Confirms map[string]*Confirms `json:"confirms,omitempty"`
}

// Delivery is one basic.deliver.
type Delivery struct {
	Step        string `json:"step"`
	Body        string `json:"body"`
	Tag         uint64 `json:"tag"`
	Redelivered bool   `json:"redelivered,omitempty"`
	// With cons.Meta only:
	Exchange   string `json:"exchange,omitempty"`
	RoutingKey string `json:"routing_key,omitempty"`
	Headers    string `json:"headers,omitempty"`
}

// Closed is a server-initiated connection.close or channel.close.
type Closed struct {
	Step   string `json:"step"`
	Code   int    `json:"code"`
	Reason string `json:"reason"`
}

// Return is one basic.return.
type Return struct {
	Step       string `json:"step"`
	Code       uint16 `json:"code"`
	Text       string `json:"text"`
	Exchange   string `json:"exchange"`
	RoutingKey string `json:"routing_key"`
	Body       string `json:"body"`
}

// Confirms are the delivery tags of basic.ack and basic.nack.
type Confirms struct {
	Acked  []uint64 `json:"acked,omitempty"`
	Nacked []uint64 `json:"nacked,omitempty"`
}

// goldenFile is the JSON of testdata/conformance/<case>.json.
type goldenFile struct {
	Source  string  `json:"source"`
	Outcome Outcome `json:"outcome"`
}

type confCase struct {
	name string
	run  func(t *testing.T, e *env)
}

var conformanceCases []confCase

// conformance registers cases; each cases file calls it from a var block.
func conformance(cs ...confCase) bool {
	conformanceCases = append(conformanceCases, cs...)
	return true
}

func TestConformance(t *testing.T) {
	url := os.Getenv("AMQP_URL")
	update := *updateConformance || os.Getenv("AMQPSIM_UPDATE_CONFORMANCE") != ""
	if update && url == "" {
		t.Fatal("-update-conformance records from a broker: set AMQP_URL")
	}
	seen := map[string]bool{}
	for _, c := range conformanceCases {
		if seen[c.name] {
			t.Fatalf("case %s registered twice", c.name)
		}
		seen[c.name] = true
	}
	// The cases mostly wait (for quiescence, for TTLs), so they run many at
	// a time: subtests started from goroutines, which -parallel (GOMAXPROCS
	// by default, 2 on a small CI machine) does not limit the way it limits
	// t.Parallel.
	sem := make(chan struct{}, conformanceConcurrency)
	var wg sync.WaitGroup
	for _, c := range conformanceCases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t.Run(c.name, func(t *testing.T) { conformanceCase(t, c, url, update) })
		}()
	}
	wg.Wait()
}

// conformanceConcurrency is how many cases run at a time.
const conformanceConcurrency = 16

// conformanceCase runs c on the simulator and, with url, on the broker
// (both at once), and compares the outcomes with each other and with the
// golden file, or records the broker's outcome as the golden file.
func conformanceCase(t *testing.T, c confCase, url string, update bool) {
	path := filepath.Join(conformanceDir, c.name+".json")
	var golden goldenFile
	if !update {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("no golden outcome (record it with AMQP_URL=... go test -run Conformance -update-conformance): %v", err)
		}
		if err := json.Unmarshal(data, &golden); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	var broker, sim Outcome
	var version string
	var wg sync.WaitGroup
	if url != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			broker, version = runCase(t, c, brokerEnv(t, url))
		}()
	}
	sim, _ = runCase(t, c, simEnv(t))
	wg.Wait()
	if t.Failed() {
		return
	}
	want, wantFrom := golden.Outcome, "golden "+path
	if url != "" {
		if update {
			writeGolden(t, path, goldenFile{Source: "rabbitmq " + version, Outcome: broker})
		} else if diff := cmpOutcome(golden.Outcome, broker); diff != "" {
			t.Errorf("the broker at AMQP_URL (%s) differs from %s (-golden +broker):\n%s", version, path, diff)
		}
		want, wantFrom = broker, "the broker at AMQP_URL"
	}
	if diff := cmpOutcome(want, sim); diff != "" {
		t.Errorf("the simulator differs from %s (-want +sim):\n%s", wantFrom, diff)
	}
}

// Every golden file belongs to a case.
func TestConformanceGoldenFiles(t *testing.T) {
	names := map[string]bool{}
	for _, c := range conformanceCases {
		names[c.name+".json"] = true
	}
	files, err := filepath.Glob(filepath.Join(conformanceDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !names[filepath.Base(f)] {
			t.Errorf("%s belongs to no conformance case", f)
		}
	}
	if len(conformanceCases) < 40 {
		t.Errorf("%d conformance cases", len(conformanceCases))
	}
}

func cmpOutcome(want, got Outcome) string {
	return cmp.Diff(want, got, cmpopts.EquateEmpty())
}

func writeGolden(t *testing.T, path string, g goldenFile) {
	data, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runCase runs c in its own subtest ("rabbitmq" or "sim") and returns the
// outcome and, for a broker, its version. It may be called from several
// goroutines at once, as t.Run may.
func runCase(t *testing.T, c confCase, e *env) (Outcome, string) {
	t.Run(e.kind, func(t *testing.T) {
		e.t = t
		// A case that hangs (a reply that never comes) is cut short by
		// closing its connections, which fails every pending call.
		watchdog := time.AfterFunc(30*time.Second, func() {
			t.Errorf("case still running after 30 s: closing its connections")
			e.closeAll()
		})
		defer watchdog.Stop()
		defer e.finish() // also after a t.Fatal
		c.run(t, e)
	})
	return e.out, e.version
}

// env is where a case runs: the simulator or a broker.
type env struct {
	t       *testing.T
	kind    string                                       // "sim" or "rabbitmq"
	url     string                                       // to dial
	dial    func(network, addr string) (net.Conn, error) // unwrapped
	srv     *amqptest.Server                             // sim only
	quiet   time.Duration
	prefix  string // of every queue and exchange name
	version string // the broker's

	last atomic.Int64 // unix nanos of the last frame or observation
	wg   sync.WaitGroup

	mu        sync.Mutex
	done      bool // finishing: observations are no longer recorded
	step      string
	out       Outcome
	conns     []*amqp.Connection
	chans     []*amqp.Channel
	queues    []string // real names, to delete
	exchanges []string
}

func newPrefix() string {
	var b [4]byte
	rand.Read(b[:])
	return "cf" + hex.EncodeToString(b[:]) + "."
}

func simEnv(t *testing.T) *env {
	srv := amqptest.NewServer(t)
	return &env{kind: "sim", url: srv.URL(), dial: srv.Dial, srv: srv,
		quiet: 50 * time.Millisecond, prefix: newPrefix(), step: "start"}
}

func brokerEnv(t *testing.T, url string) *env {
	e := &env{kind: "rabbitmq", url: url, quiet: 150 * time.Millisecond, prefix: newPrefix(), step: "start"}
	e.dial = func(network, addr string) (net.Conn, error) {
		return net.DialTimeout(network, addr, 5*time.Second)
	}
	t.Cleanup(func() { e.cleanup(t) })
	return e
}

// activity notes that something happened now.
func (e *env) activity() { e.last.Store(time.Now().UnixNano()) }

// settle waits for quiescence: a barrier first (below), then until
// nothing has happened for e.quiet.
func (e *env) settle() {
	e.barrier()
	for {
		idle := time.Since(time.Unix(0, e.last.Load()))
		if idle >= e.quiet {
			return
		}
		time.Sleep(e.quiet - idle)
	}
}

// barrier makes a round trip on every open connection (channel.open and
// channel.close) and channel (channel.flow active=true, a no-op for both),
// twice. On the simulator that makes sure the server has handled every
// frame the clients sent and the clients have read every frame it sent
// before: it handles a connection's frames in order, each broker call
// complete (pushes to any connection queued) before the next, so only the
// client's hand-off to the case's goroutines is left for the quiet period.
// On RabbitMQ it makes sure the connection and channel processes have
// caught up, which keeps a loaded machine from passing for a quiet one;
// queue processes are only covered by the quiet period.
func (e *env) barrier() {
	e.mu.Lock()
	conns, chans := slices.Clone(e.conns), slices.Clone(e.chans)
	e.mu.Unlock()
	for range 2 {
		for _, c := range conns {
			if c.IsClosed() {
				continue
			}
			if ch, err := c.Channel(); err == nil {
				ch.Close()
			}
		}
		for _, ch := range chans {
			if !ch.IsClosed() {
				_ = ch.Flow(true)
			}
		}
	}
}

// Step waits for quiescence, then names what follows: whatever arrives
// from now on is attributed to this step.
func (e *env) Step(name string) {
	e.settle()
	e.mu.Lock()
	e.step = name
	e.mu.Unlock()
}

// Wait lets d pass on the broker's clock and then waits for quiescence: a
// real sleep against RabbitMQ, Broker().Advance on the simulator.
func (e *env) Wait(d time.Duration) {
	e.settle()
	if e.srv != nil {
		e.srv.Broker().Advance(d)
	} else {
		time.Sleep(d)
	}
	e.activity()
	e.settle()
}

// Q returns the run's name for queue name (and deletes it at the end).
func (e *env) Q(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queues = append(e.queues, e.prefix+name)
	return e.prefix + name
}

// X returns the run's name for exchange name (and deletes it at the end).
func (e *env) X(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.exchanges = append(e.exchanges, e.prefix+name)
	return e.prefix + name
}

var generated = regexp.MustCompile(`amq\.(gen|ctag)-[A-Za-z0-9_-]+`)

// norm maps run names back to stable ones.
func (e *env) norm(s string) string {
	s = strings.ReplaceAll(s, e.prefix, "")
	return generated.ReplaceAllString(s, "amq.$1-*")
}

// Log records a result line (normalised).
func (e *env) Log(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.out.Log = append(e.out.Log, e.norm(fmt.Sprintf(format, args...)))
}

// record runs f on the outcome under the lock unless finishing.
func (e *env) record(f func(o *Outcome, step string)) {
	e.activity()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.done {
		f(&e.out, e.step)
	}
}

func errText(err error) string {
	var aerr *amqp.Error
	if errors.As(err, &aerr) {
		return fmt.Sprintf("error %d %s", aerr.Code, aerr.Reason)
	}
	return "error " + err.Error()
}

// activeConn counts the bytes of a connection as activity.
type activeConn struct {
	net.Conn
	e *env
}

func (c activeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.e.activity()
	}
	return n, err
}

func (c activeConn) Write(p []byte) (int, error) {
	c.e.activity()
	return c.Conn.Write(p)
}

// Conn opens a connection; its server-sent close is recorded as label.
func (e *env) Conn(label string) *Conn {
	e.t.Helper()
	conn, err := amqp.DialConfig(e.url, amqp.Config{
		Heartbeat:  10 * time.Second,
		Locale:     "en_US",
		Properties: amqp.Table{"connection_name": label},
		Dial: func(network, addr string) (net.Conn, error) {
			c, err := e.dial(network, addr)
			if err != nil {
				return nil, err
			}
			return activeConn{c, e}, nil
		},
	})
	if err != nil {
		e.t.Fatalf("dial %s: %v", e.kind, err)
	}
	e.mu.Lock()
	e.conns = append(e.conns, conn)
	if v, ok := conn.Properties["version"].(string); ok && e.version == "" {
		e.version = v
	}
	e.mu.Unlock()
	e.watchClose(label, conn.NotifyClose(make(chan *amqp.Error, 1)))
	return &Conn{e: e, label: label, conn: conn}
}

func (e *env) watchClose(label string, c chan *amqp.Error) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for err := range c {
			e.record(func(o *Outcome, step string) {
				if o.Closed == nil {
					o.Closed = map[string]Closed{}
				}
				o.Closed[label] = Closed{Step: step, Code: err.Code, Reason: e.norm(err.Reason)}
			})
		}
	}()
}

// Conn is a client connection.
type Conn struct {
	e     *env
	label string
	conn  *amqp.Connection
}

// Ch opens a channel; its server-sent close is recorded as label, and its
// basic.cancel and basic.return under label too.
func (c *Conn) Ch(label string) *Ch {
	e := c.e
	e.t.Helper()
	ch, err := c.conn.Channel()
	if err != nil {
		e.t.Fatalf("channel %s: %v", label, err)
	}
	e.mu.Lock()
	e.chans = append(e.chans, ch)
	e.mu.Unlock()
	e.watchClose(label, ch.NotifyClose(make(chan *amqp.Error, 1)))
	cancels := ch.NotifyCancel(make(chan string, 16))
	returns := ch.NotifyReturn(make(chan amqp.Return, 16))
	e.wg.Add(2)
	go func() {
		defer e.wg.Done()
		for tag := range cancels {
			e.record(func(o *Outcome, step string) {
				if o.Cancels == nil {
					o.Cancels = map[string][]string{}
				}
				o.Cancels[label] = append(o.Cancels[label], step+": "+e.norm(tag))
			})
		}
	}()
	go func() {
		defer e.wg.Done()
		for r := range returns {
			e.record(func(o *Outcome, step string) {
				if o.Returns == nil {
					o.Returns = map[string][]Return{}
				}
				o.Returns[label] = append(o.Returns[label], Return{Step: step, Code: r.ReplyCode,
					Text: e.norm(r.ReplyText), Exchange: e.norm(r.Exchange),
					RoutingKey: e.norm(r.RoutingKey), Body: string(r.Body)})
			})
		}
	}()
	return &Ch{e: e, label: label, ch: ch}
}

// Close closes the connection from the client side.
func (c *Conn) Close() {
	if err := c.conn.Close(); err != nil {
		c.e.Log("%s close -> %s", c.label, errText(err))
	}
}

// Ch is a channel.
type Ch struct {
	e     *env
	label string
	ch    *amqp.Channel
}

// logErr logs "label op -> error ..." if err is not nil.
func (c *Ch) logErr(op string, err error) {
	if err != nil {
		c.e.Log("%s %s -> %s", c.label, op, errText(err))
	}
}

// qopt are queue.declare options.
type qopt struct {
	Durable, AutoDelete, Exclusive, Passive, NoWait bool
	Args                                            amqp.Table
}

// Declare declares queue q (a run name, or "" for a server-named one) and
// logs declare-ok's counts. It returns the queue's name.
func (c *Ch) Declare(q string, o ...qopt) string {
	var opt qopt
	if len(o) > 0 {
		opt = o[0]
	}
	declare := c.ch.QueueDeclare
	if opt.Passive {
		declare = c.ch.QueueDeclarePassive
	}
	r, err := declare(q, opt.Durable, opt.AutoDelete, opt.Exclusive, opt.NoWait, opt.Args)
	op := "declare " + q
	if opt.Passive {
		op = "declare passive " + q
	}
	if err != nil {
		c.logErr(op, err)
		return ""
	}
	if q == "" {
		c.e.mu.Lock()
		c.e.queues = append(c.e.queues, r.Name)
		c.e.mu.Unlock()
		op += "(" + r.Name + ")"
	}
	if !opt.NoWait {
		c.e.Log("%s %s -> messages=%d consumers=%d", c.label, op, r.Messages, r.Consumers)
	}
	return r.Name
}

// DeclareX declares exchange x of kind.
func (c *Ch) DeclareX(x, kind string, args amqp.Table) {
	c.logErr("declare exchange "+x+" "+kind, c.ch.ExchangeDeclare(x, kind, false, false, false, false, args))
}

// Bind binds queue q to exchange x with key.
func (c *Ch) Bind(q, key, x string, args amqp.Table) {
	c.logErr(fmt.Sprintf("bind %s %s %s", q, key, x), c.ch.QueueBind(q, key, x, false, args))
}

// Publish publishes bodies to queue q through the default exchange.
func (c *Ch) Publish(q string, bodies ...string) {
	for _, b := range bodies {
		c.PublishMsg("", q, false, amqp.Publishing{Body: []byte(b)})
	}
}

// PublishMsg publishes p to exchange x with key.
func (c *Ch) PublishMsg(x, key string, mandatory bool, p amqp.Publishing) {
	err := c.ch.PublishWithContext(context.Background(), x, key, mandatory, false, p)
	c.logErr(fmt.Sprintf("publish %s %s %s", x, key, p.Body), err)
}

// cons are basic.consume options. Meta also records each delivery's
// exchange, routing key and headers.
type cons struct {
	NoAck, Exclusive bool
	Args             amqp.Table
	Meta             bool
}

// Consume starts consumer tag on q; what it is pushed is recorded under
// the tag ("" lets the server name it, recorded as "amq.ctag-*").
func (c *Ch) Consume(q, tag string, o ...cons) {
	var opt cons
	if len(o) > 0 {
		opt = o[0]
	}
	ds, err := c.ch.Consume(q, tag, opt.NoAck, opt.Exclusive, false, false, opt.Args)
	if err != nil {
		c.logErr(fmt.Sprintf("consume %s %s", q, tag), err)
		return
	}
	key := tag
	if key == "" {
		key = c.label + ":amq.ctag-*"
	}
	e := c.e
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for d := range ds {
			rec := Delivery{Body: string(d.Body), Tag: d.DeliveryTag, Redelivered: d.Redelivered}
			if opt.Meta {
				rec.Exchange, rec.RoutingKey = e.norm(d.Exchange), e.norm(d.RoutingKey)
				rec.Headers = e.headers(d.Headers)
			}
			if tag != "" && d.ConsumerTag != tag {
				rec.Body += " (for consumer " + d.ConsumerTag + ")"
			}
			e.record(func(o *Outcome, step string) {
				rec.Step = step
				if o.Consumers == nil {
					o.Consumers = map[string][]Delivery{}
				}
				o.Consumers[key] = append(o.Consumers[key], rec)
			})
		}
	}()
}

// headers formats message headers, leaving out x-death's times.
func (e *env) headers(h amqp.Table) string {
	if len(h) == 0 {
		return ""
	}
	var clean func(v any) any
	clean = func(v any) any {
		switch v := v.(type) {
		case amqp.Table:
			m := map[string]any{}
			for k, x := range v {
				if k != "time" {
					m[k] = clean(x)
				}
			}
			return m
		case []any:
			out := make([]any, len(v))
			for i, x := range v {
				out[i] = clean(x)
			}
			return out
		case int8, int16, int32, int64, uint8, uint16, uint32, float32, float64:
			return fmt.Sprintf("%T(%v)", v, v) // the field type matters too
		default:
			return v
		}
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%v; ", k, clean(h[k]))
	}
	return e.norm(strings.TrimSuffix(b.String(), "; "))
}

// Get does basic.get and logs the result.
func (c *Ch) Get(q string, noAck bool) {
	d, ok, err := c.ch.Get(q, noAck)
	op := "get " + q
	if noAck {
		op += " no-ack"
	}
	switch {
	case err != nil:
		c.logErr(op, err)
	case !ok:
		c.e.Log("%s %s -> empty", c.label, op)
	default:
		r := ""
		if d.Redelivered {
			r = " redelivered"
		}
		if h := c.e.headers(d.Headers); h != "" {
			r += " headers{" + h + "}"
		}
		c.e.Log("%s %s -> %s #%d%s count=%d", c.label, op, d.Body, d.DeliveryTag, r, d.MessageCount)
	}
}

// Qos does basic.qos.
func (c *Ch) Qos(count, size int, global bool) {
	c.logErr(fmt.Sprintf("qos %d %d %t", count, size, global), c.ch.Qos(count, size, global))
}

// Ack, Nack and Reject settle tag; errors show in Closed (or are logged
// when the channel was already closed).
func (c *Ch) Ack(tag uint64, multiple bool) {
	c.logErr(fmt.Sprintf("ack %d %t", tag, multiple), c.ch.Ack(tag, multiple))
}

func (c *Ch) Nack(tag uint64, multiple, requeue bool) {
	c.logErr(fmt.Sprintf("nack %d %t %t", tag, multiple, requeue), c.ch.Nack(tag, multiple, requeue))
}

func (c *Ch) Reject(tag uint64, requeue bool) {
	c.logErr(fmt.Sprintf("reject %d %t", tag, requeue), c.ch.Reject(tag, requeue))
}

// Cancel does basic.cancel and waits for cancel-ok.
func (c *Ch) Cancel(tag string) {
	c.logErr("cancel "+tag, c.ch.Cancel(tag, false))
}

// Recover does basic.recover.
func (c *Ch) Recover(requeue bool) {
	c.logErr(fmt.Sprintf("recover %t", requeue), c.ch.Recover(requeue))
}

// Flow does channel.flow.
func (c *Ch) Flow(active bool) {
	c.logErr(fmt.Sprintf("flow %t", active), c.ch.Flow(active))
}

// Purge purges q and logs the count.
func (c *Ch) Purge(q string) {
	n, err := c.ch.QueuePurge(q, false)
	if err != nil {
		c.logErr("purge "+q, err)
		return
	}
	c.e.Log("%s purge %s -> %d", c.label, q, n)
}

// Delete deletes q and logs delete-ok's count.
func (c *Ch) Delete(q string, ifUnused, ifEmpty bool) {
	n, err := c.ch.QueueDelete(q, ifUnused, ifEmpty, false)
	op := fmt.Sprintf("delete %s if-unused=%t if-empty=%t", q, ifUnused, ifEmpty)
	if err != nil {
		c.logErr(op, err)
		return
	}
	c.e.Log("%s %s -> %d", c.label, op, n)
}

// Confirm puts the channel in confirm mode and records the confirms.
func (c *Ch) Confirm() {
	if err := c.ch.Confirm(false); err != nil {
		c.logErr("confirm", err)
		return
	}
	confirms := c.ch.NotifyPublish(make(chan amqp.Confirmation, 1024))
	e := c.e
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for cf := range confirms {
			e.record(func(o *Outcome, _ string) {
				if o.Confirms == nil {
					o.Confirms = map[string]*Confirms{}
				}
				if o.Confirms[c.label] == nil {
					o.Confirms[c.label] = &Confirms{}
				}
				if cf.Ack {
					o.Confirms[c.label].Acked = append(o.Confirms[c.label].Acked, cf.DeliveryTag)
				} else {
					o.Confirms[c.label].Nacked = append(o.Confirms[c.label].Nacked, cf.DeliveryTag)
				}
			})
		}
	}()
}

// Close closes the channel from the client side.
func (c *Ch) Close() {
	c.logErr("close", c.ch.Close())
}

// closeAll closes every connection of the env.
func (e *env) closeAll() {
	e.mu.Lock()
	conns := slices.Clone(e.conns)
	e.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// finish waits for quiescence, stops recording and closes everything.
func (e *env) finish() {
	e.settle()
	e.mu.Lock()
	e.done = true
	e.mu.Unlock()
	e.closeAll()
	e.wg.Wait()
	for _, c := range e.out.Confirms {
		slices.Sort(c.Acked)
		slices.Sort(c.Nacked)
	}
}

// cleanup deletes the queues and exchanges a broker case used.
func (e *env) cleanup(t *testing.T) {
	e.mu.Lock()
	queues, exchanges := e.queues, e.exchanges
	e.mu.Unlock()
	if len(queues)+len(exchanges) == 0 {
		return
	}
	conn, err := amqp.DialConfig(e.url, amqp.Config{Dial: e.dial})
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	defer conn.Close()
	// Each delete on a channel of its own: a failure closes the channel.
	del := func(f func(*amqp.Channel) error) {
		ch, err := conn.Channel()
		if err != nil {
			return
		}
		if f(ch) == nil {
			ch.Close()
		}
	}
	for _, q := range queues {
		del(func(ch *amqp.Channel) error { _, err := ch.QueueDelete(q, false, false, false); return err })
	}
	for _, x := range exchanges {
		del(func(ch *amqp.Channel) error { return ch.ExchangeDelete(x, false, false) })
	}
}

// A client's clean connection.close reaches no NotifyClose listener as an
// error: RabbitMQ leaves the socket to the client after close-ok, and so
// must the simulator (it used to close its side at once, and amqp091-go's
// reader then sometimes reported "501 EOF" before Close had finished).
func TestConformanceCleanClose(t *testing.T) {
	envs := []*env{simEnv(t)}
	if url := os.Getenv("AMQP_URL"); url != "" {
		envs = append(envs, brokerEnv(t, url))
	}
	for _, e := range envs {
		e.t = t
		for range 50 {
			conn, err := amqp.DialConfig(e.url, amqp.Config{Dial: e.dial})
			if err != nil {
				t.Fatalf("%s: %v", e.kind, err)
			}
			closes := conn.NotifyClose(make(chan *amqp.Error, 1))
			ch, err := conn.Channel()
			if err != nil {
				t.Fatalf("%s: %v", e.kind, err)
			}
			chCloses := ch.NotifyClose(make(chan *amqp.Error, 1))
			if err := conn.Close(); err != nil {
				t.Fatalf("%s: close: %v", e.kind, err)
			}
			if err, ok := <-closes; ok {
				t.Fatalf("%s: NotifyClose on the connection got %v after a clean close", e.kind, err)
			}
			if err, ok := <-chCloses; ok {
				t.Fatalf("%s: NotifyClose on the channel got %v after a clean close", e.kind, err)
			}
		}
	}
}
