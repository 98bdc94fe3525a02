package sim

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/amqpsim/amqpsim/cluster"
	"github.com/amqpsim/amqpsim/definitions"
	"github.com/amqpsim/amqpsim/internal/scratch"
	"github.com/amqpsim/amqpsim/queue"
)

// Config configures a Broker. The zero value is a broker like a fresh
// RabbitMQ 4.3 (DefaultVersion) with one vhost "/".
type Config struct {
	// Version is the RabbitMQ release series simulated (see Profile for
	// what each changes); zero means DefaultVersion, 4.3.
	Version Version
	// Permit names deprecated features to permit although the release
	// denies them, as rabbitmq.conf's deprecated_features.permit.NAME =
	// true does: "global_qos" (denied from 4.3) and
	// "transient_nonexcl_queues" (denied by no release's profile: 4.3.6
	// permits it by default; a Config.Profile may deny it). New ignores
	// other names; CheckPermit tells them.
	Permit []string
	// Profile, when set, is used instead of Version's: a release with
	// some of its changes undone (Change.Undo), as the upgrade check
	// does to find which change makes a scenario answer differently.
	Profile *Profile
	// Start is the virtual clock's starting time; zero means Epoch().
	Start time.Time
	// Seed feeds the one random source: generated queue names and consumer
	// tags, and the order in which a channel-wide limit releases queues
	// (random in RabbitMQ too). The same seed and calls give the same trace.
	Seed uint64
	// Salts, when set, is where the broker reads the 4 random bytes of
	// each password salt it makes (RabbitMQ's rabbit_password:
	// generate_salt/0 takes them from crypto:strong_rand_bytes/1); pass
	// crypto/rand.Reader for salts nobody can predict, as amqpsim serve
	// does unless given --seed. Nil draws them from Seed, apart from the
	// other random choices: the same seed gives the same hashes, which
	// suits tests and replays, not a broker others can reach.
	Salts io.Reader
	// NoTrace turns the event trace off (for benchmarks and long runs).
	NoTrace bool
	// ConsumerTimeout is RabbitMQ's consumer_timeout: before 4.3 a
	// channel whose oldest unacked delivery is older than this is closed
	// with 406 at its next tick; from 4.3 only quorum queues time out,
	// each delivery at this long after it, read when the consumer joins
	// (the queue takes it back and the channel cancels the consumer:
	// queue.Rules.QuorumConsumerTimeout). Zero means RabbitMQ's default,
	// 30 minutes; negative disables it (RabbitMQ: a non-integer setting,
	// which 4.3 reads as 24 hours) where no x-consumer-timeout or policy
	// sets one.
	ConsumerTimeout time.Duration
	// ConsumerMaxPerChannel is RabbitMQ's consumer_max_per_channel
	// (4.0+): a basic.consume on a channel that already has this many
	// consumers closes the connection with 530 NOT_ALLOWED. Zero means
	// RabbitMQ's default, infinity. Releases before 4.0 have no such
	// setting (their rabbitmq.conf schema refuses the key), so Open
	// returns an error for a positive value on their profiles; a
	// negative value is an error everywhere.
	ConsumerMaxPerChannel int
	// ChannelTickInterval is how often a channel checks the consumer
	// timeout (RabbitMQ's channel_tick_interval); zero means 60 s.
	ChannelTickInterval time.Duration
	// MaxMessageSize is RabbitMQ's max_message_size: the largest body a
	// publish may carry (Broker.MaxMessageSize). Zero means the release's
	// default (Profile.MaxMessageSize); like RabbitMQ, the broker takes
	// no more than MaxMessageSizeCap.
	MaxMessageSize uint64
	// Clock, when set, is the time the virtual clock follows instead of
	// moving only by Advance (see the package doc, "Time"). The broker
	// never reads the time itself; the caller supplies it (time.Now, which
	// in a testing/synctest bubble is the bubble's fake clock; an amqptest
	// server then wakes the broker at its timers). Start then defaults to
	// Clock().
	Clock func() time.Time

	// DefaultUser and DefaultPass are the user a fresh broker creates,
	// RabbitMQ's default_user and default_pass; "" means "guest". The
	// user gets DefaultUserTags and DefaultPermissions in DefaultVhost.
	DefaultUser string
	DefaultPass string
	// DefaultVhost is the vhost a fresh broker creates (default_vhost);
	// "" means "/". In-process connections whose ConnectOptions.Vhost is
	// "" open it.
	DefaultVhost string
	// DefaultUserTags are the default user's tags; nil means
	// [administrator] (default_user_tags).
	DefaultUserTags []string
	// DefaultPermissions are the default user's permissions in the
	// default vhost; nil means FullPermissions (default_permissions).
	DefaultPermissions *Permissions
	// LoopbackUsers may log in only over loopback (loopback_users); nil
	// means ["guest"], an empty non-nil slice nobody.
	LoopbackUsers []string
	// Nodes is the number of nodes of a simulated cluster (see the
	// package's cluster rules in cluster.go); 0 or 1 is one node, a
	// broker as today's single RabbitMQ. A cluster needs Version 4.3
	// (the default): Open refuses one of an earlier release.
	Nodes int
	// NodeNames names the nodes, as RabbitMQ's error texts and
	// inspection show them; nil means "rabbit@node1" to "rabbit@nodeN"
	// (one node: "rabbit@localhost"). Its length must be Nodes.
	NodeNames []string

	// Definitions, when set, are imported into the fresh broker, as
	// RabbitMQ's load_definitions does at boot: after the default user
	// and vhost are created (see Open). definitions.Parse reads a file.
	Definitions *definitions.File
}

func (cfg Config) profile() Profile {
	p := cfg.Version.Profile()
	if cfg.Profile != nil {
		p = *cfg.Profile
	}
	return p.permit(cfg.Permit)
}

// checkConsumerMax refuses a consumer_max_per_channel the profile does
// not have, and a negative one.
func (cfg Config) checkConsumerMax() error {
	switch n := cfg.ConsumerMaxPerChannel; {
	case n < 0:
		return fmt.Errorf("sim: Config.ConsumerMaxPerChannel is %d; want 0 (no limit) or more", n)
	case n > 0 && !cfg.profile().ConsumerMaxPerChannel:
		return fmt.Errorf("sim: Config.ConsumerMaxPerChannel: RabbitMQ %v has no consumer_max_per_channel (4.0+)", cfg.profile().Version)
	}
	return nil
}

// DefaultConsumerTimeout is RabbitMQ's default consumer_timeout.
const DefaultConsumerTimeout = 30 * time.Minute

// DefaultChannelTickInterval is RabbitMQ's default channel_tick_interval.
const DefaultChannelTickInterval = 60 * time.Second

// Broker is a simulated RabbitMQ broker. All its methods are safe for
// concurrent use; one lock serialises them, and the state below it is a
// single-threaded state machine with a virtual clock.
type Broker struct {
	mu brokerLock

	cfg     Config
	profile Profile // cfg.Version's rules
	now     time.Time
	elapsed int64 // now - cfg.Start in nanoseconds, for the hot paths (setNow)
	rng     *rand.Rand
	timers  timerHeap
	seq     uint64   // timer creation order
	dueIn   dueCache // scheduleIn's last due time

	// msgBlock is the unused rest of the block newMessage carves from;
	// bodyBlock that of the block ownCopy carves small bodies from.
	msgBlock  []queue.Message
	bodyBlock []byte
	// lastVhost is the vhost lookupVhost last found (DeleteVhost forgets it).
	lastVhost *vhost
	// maxMessageSize is MaxMessageSize, fixed by the configuration.
	maxMessageSize uint64

	vhosts map[string]*vhost
	// users are the internal database's users by name; salts is the
	// random source of their password salts, apart from rng so that
	// adding users does not change generated names.
	users map[string]*user
	// globals are the global runtime parameters a definitions file set
	// (cluster_name...), kept as they came.
	globals       map[string]json.RawMessage
	salts         *rand.Rand
	loopbackUsers []string
	conns         []*Connection // open connections in connect order
	// alarms holds the raised resource alarms (an Alarm); changed under
	// the lock, read without it on the publish path (alarm.go).
	alarms   atomic.Uint32
	nackNext int // publishes still to nack (NackPublishes)
	// alarmClears are SetAlarmFor's timers, one per alarm.
	alarmClears map[Alarm]*timer
	// armed are the DeliveryFaults counting down, fired the closes they
	// pushed that flush still has to apply, delivered the deliveries
	// pushed so far (deliveryfault.go).
	armed      []*armedFault
	fired      []firedFault
	delivered  uint64
	nextConnID uint64
	// nextQueueID numbers queues in creation order.
	nextQueueID uint64

	trace []Event

	// nodes are the cluster's nodes, one for a single broker;
	// publisher is the channel whose publish is being routed, and
	// heldNow the confirm its held messages wait for (cluster.go).
	topo      *cluster.Topology
	multiNode bool // topo has more than one node
	publisher *Channel
	heldNow   *waitingConfirm
	// resumed are the channels whose mailboxes may run, unblocked the
	// connections whose held calls may (mailbox.go), at the end of the
	// current step.
	resumed   []*Channel
	unblocked []*Connection
	// recovery is RecoverAfter's timer.
	recovery *timer
	// nodeEvents are the last node events, numbered up to nodeSeq;
	// nodeNext is closed at the next one (cluster_events.go).
	nodeEvents []NodeEvent
	nodeSeq    uint64
	nodeNext   chan struct{}

	// nextMessageID numbers published messages (Event.MessageID).
	nextMessageID uint64
	// replies maps direct reply-to names to their channels.
	replies map[string]*Channel

	// dirty queues need a dispatch before the current call returns;
	// flush has dispatched those before index flushed.
	dirty   []*brokerQueue
	flushed int
	// Scratch slices reused by every call to keep the hot path free of
	// allocations.
	routed    []*brokerQueue
	routeKeys []string
	// consensus holds, during enqueue, the queues that deliver after
	// consensus, to be dispatched after the others.
	consensus []*brokerQueue
	settled   []queue.Settled[*Consumer]
	// holdDeadLetters is set during a settlement that may dead-letter:
	// deadLetters collects its dead letters until its queue has
	// dispatched (settleGroup). A slice of the broker's, not a pointer to
	// the caller's, so that a settlement without dead letters allocates
	// nothing.
	holdDeadLetters bool
	deadLetters     []deadLetter
	// router is route's state; routeMark numbers the routes, which mark
	// the queues and exchanges they reach.
	router    router
	routeMark uint64
}

// New returns a broker with the virtual clock at cfg.Start (or Epoch()).
// It panics if cfg is invalid (an invalid DefaultPermissions expression,
// a ConsumerMaxPerChannel the release lacks, or Definitions that do not
// import); use Open for a Config built from input.
func New(cfg Config) *Broker {
	b, err := Open(cfg)
	if err != nil {
		panic(err)
	}
	return b
}

// Open is New for a Config that may be invalid: it returns an error for
// an invalid DefaultPermissions expression or DefaultPass, for a
// ConsumerMaxPerChannel below 0 or set on a release before 4.0, and for
// Definitions that do not import, naming the bad entry.
func Open(cfg Config) (*Broker, error) {
	if cfg.Start.IsZero() {
		cfg.Start = Epoch()
		if cfg.Clock != nil {
			cfg.Start = cfg.Clock()
		}
	}
	if cfg.ConsumerTimeout == 0 {
		cfg.ConsumerTimeout = DefaultConsumerTimeout
	}
	if cfg.ChannelTickInterval <= 0 {
		cfg.ChannelTickInterval = DefaultChannelTickInterval
	}
	if err := cfg.checkConsumerMax(); err != nil {
		return nil, err
	}
	cfg.DefaultUser = cmp.Or(cfg.DefaultUser, "guest")
	cfg.DefaultPass = cmp.Or(cfg.DefaultPass, "guest")
	cfg.DefaultVhost = cmp.Or(cfg.DefaultVhost, "/")
	if cfg.DefaultUserTags == nil {
		cfg.DefaultUserTags = []string{TagAdministrator}
	}
	if cfg.DefaultPermissions == nil {
		cfg.DefaultPermissions = &FullPermissions
	}
	b := &Broker{
		cfg:           cfg,
		profile:       cfg.profile(),
		now:           cfg.Start,
		rng:           rand.New(rand.NewPCG(cfg.Seed, 0x616d717073696d)),
		salts:         rand.New(rand.NewPCG(cfg.Seed, 0x73616c74)),
		vhosts:        map[string]*vhost{},
		users:         map[string]*user{},
		loopbackUsers: cfg.LoopbackUsers,
		replies:       map[string]*Channel{},
	}
	if b.loopbackUsers == nil {
		b.loopbackUsers = []string{"guest"}
	}
	b.router.walk.visit, b.router.walk.budget = b.router.take, routeStateBudget
	b.maxMessageSize = cfg.maxMessageSize(&b.profile)
	if err := b.initNodes(); err != nil {
		return nil, err
	}
	b.mu.init()
	b.mu.after = b.runMailboxes
	if cfg.Clock != nil {
		b.mu.before = b.follow
	}
	// rabbit_vhost:add and rabbit_auth_backend_internal seed a fresh
	// node: the default vhost, the default user, its permissions.
	b.addVhost(cfg.DefaultVhost)
	b.vhosts[cfg.DefaultVhost].description = DefaultVhostDescription
	u, err := b.newUser(User{Name: cfg.DefaultUser, Password: cfg.DefaultPass, Tags: cfg.DefaultUserTags})
	if err != nil {
		return nil, err
	}
	b.users[u.name] = u
	p, err := compilePermission(*cfg.DefaultPermissions)
	if err != nil {
		return nil, fmt.Errorf("sim: Config.DefaultPermissions: %w", err)
	}
	b.vhosts[cfg.DefaultVhost].perms[u.name] = p
	if cfg.Definitions != nil {
		if err := b.ImportDefinitions(cfg.Definitions); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Config returns the configuration the broker was opened with, Open's
// defaults filled in: Start, ConsumerTimeout, ChannelTickInterval and the
// default user, password, vhost, tags and permissions. It does not change
// after Open; its slices and pointers are the broker's, not to be
// modified.
func (b *Broker) Config() Config { return b.cfg }

// AddVhost creates a virtual host with the predeclared exchanges. Adding an
// existing one does nothing. No user has permissions in a new vhost until
// SetPermissions grants them, as in RabbitMQ.
func (b *Broker) AddVhost(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.addVhost(name)
}

// Vhosts returns the virtual hosts' names, sorted.
func (b *Broker) Vhosts() []string {
	b.mu.Lock()
	defer b.mu.unlockView()
	return slices.Sorted(maps.Keys(b.vhosts))
}

// Now returns the virtual time.
func (b *Broker) Now() time.Time {
	b.mu.Lock()
	defer b.mu.unlockView()
	return b.now
}

// Advance moves the virtual clock forward by d, firing every timer that
// falls due on the way in (due time, creation) order, each at its own due
// time, as if the time had passed continuously. A negative d does nothing.
// The clock runs for MaxClock from its start; an Advance beyond that fails,
// moving nothing. A broker whose clock follows Config.Clock refuses
// Advance: it has one clock, and that one moves by itself.
func (b *Broker) Advance(d time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cfg.Clock != nil {
		return fmt.Errorf("sim: the virtual clock follows Config.Clock; Advance is for the manual clock")
	}
	if d < 0 {
		return nil
	}
	if elapsed := b.now.Sub(b.cfg.Start); d > MaxClock-elapsed {
		return fmt.Errorf("sim: cannot advance the virtual clock by %v: it runs for %v from its start, and %v have passed", d, MaxClock, elapsed)
	}
	b.advanceTo(b.now.Add(d))
	return nil
}

// advanceTo moves the clock to end, which is not before now and within
// MaxClock, firing the timers due on the way; caller holds the lock. It
// reports whether a timer fired.
func (b *Broker) advanceTo(end time.Time) bool {
	fired := false
	sameInstant := 0
	for len(b.timers) > 0 && !b.timers[0].due.After(end) {
		t := b.timers.pop()
		if t.due.Equal(b.now) {
			// Every timer's work moves it later or stops it; one that
			// keeps re-arming at the same instant is a broker bug, which
			// must fail loudly instead of spinning.
			if sameInstant++; sameInstant > maxFiringsPerInstant {
				panic(fmt.Sprintf("sim: more than %d timer firings at %v: a timer re-arms without the clock moving", maxFiringsPerInstant, t.due))
			}
		} else {
			sameInstant = 0
		}
		b.setNow(t.due)
		t.fire()
		b.flush()
		if b.mu.due {
			b.runMailboxes() // at the time the wait ended
		}
		fired = true
	}
	b.setNow(end)
	return fired
}

// setNow moves the clock to t; caller holds the lock.
func (b *Broker) setNow(t time.Time) {
	b.now = t
	b.elapsed = int64(t.Sub(b.cfg.Start))
}

// MaxClock is how long the virtual clock runs from its start: about 280
// years, so that every expiry (at most ten years ahead, see
// queue.MaxTimeout) stays representable in nanoseconds.
const MaxClock = time.Duration(math.MaxInt64) - 12*365*24*time.Hour

// maxFiringsPerInstant bounds the timers that may fire at one virtual
// instant: far above any real load (one timer per queue and channel), far
// below a hang.
const maxFiringsPerInstant = 1 << 20

// timer is a callback on the virtual clock. A timer is made once and
// scheduled again and again, so that hot paths allocate nothing.
type timer struct {
	due   time.Time
	seq   uint64 // breaks ties: creation order of the scheduling
	fire  func()
	index int // position in the heap, -1 when not scheduled
}

// timerHeap orders the scheduled timers by (due, seq), a total order, so
// they fire in one order whatever the heap's shape. It is container/heap's
// algorithm on the concrete type: a channel's tick is scheduled and
// stopped on every delivery and ack.
type timerHeap []*timer

func (h timerHeap) less(i, j int) bool {
	if c := h[i].due.Compare(h[j].due); c != 0 {
		return c < 0
	}
	return h[i].seq < h[j].seq
}

func (h timerHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h timerHeap) up(j int) {
	for {
		i := (j - 1) / 2 // parent
		if i == j || !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h timerHeap) down(i0, n int) bool {
	i := i0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 { // j1 < 0 after int overflow
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && h.less(j2, j1) {
			j = j2 // right child
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

func (h *timerHeap) push(t *timer) {
	t.index = len(*h)
	*h = append(*h, t)
	h.up(t.index)
}

// pop removes the first timer and returns it.
func (h *timerHeap) pop() *timer {
	n := len(*h) - 1
	h.swap(0, n)
	h.down(0, n)
	return h.dropLast()
}

// remove removes the timer at index i.
func (h *timerHeap) remove(i int) {
	n := len(*h) - 1
	if n != i {
		h.swap(i, n)
		if !h.down(i, n) {
			h.up(i)
		}
	}
	h.dropLast()
}

func (h *timerHeap) dropLast() *timer {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// fix restores the order after the timer at index i changed.
func (h timerHeap) fix(i int) {
	if !h.down(i, len(h)) {
		h.up(i)
	}
}

func newTimer(fire func()) *timer { return &timer{fire: fire, index: -1} }

// schedule sets t to fire at due, replacing any earlier schedule; caller
// holds the lock.
func (b *Broker) schedule(t *timer, due time.Time) {
	b.seq++
	t.due, t.seq = due, b.seq
	if t.index >= 0 {
		b.timers.fix(t.index)
		return
	}
	b.timers.push(t)
}

// scheduleIn schedules t d from now. The channels' ticks are scheduled
// d = ChannelTickInterval from now with every first unacked delivery: the
// time is computed once per instant. Caller holds the lock.
func (b *Broker) scheduleIn(t *timer, d time.Duration) {
	if c := &b.dueIn; c.d != d || c.at != b.elapsed || !c.set {
		*c = dueCache{due: b.now.Add(d), d: d, at: b.elapsed, set: true}
	}
	b.schedule(t, b.dueIn.due)
}

// dueCache is scheduleIn's last due time, now + d at elapsed at.
type dueCache struct {
	due time.Time
	d   time.Duration
	at  int64
	set bool
}

// stop unschedules t; caller holds the lock.
func (b *Broker) stop(t *timer) {
	if t != nil && t.index >= 0 {
		b.timers.remove(t.index)
	}
}

// randomName returns prefix followed by 22 base64url characters, the shape
// of RabbitMQ's generated names (rabbit_guid).
func (b *Broker) randomName(prefix string) string {
	var raw [16]byte
	for i := 0; i < 16; i += 8 {
		v := b.rng.Uint64()
		for j := 0; j < 8; j++ {
			raw[i+j] = byte(v >> (8 * j))
		}
	}
	return prefix + base64.RawURLEncoding.EncodeToString(raw[:])
}

// markDirty queues q for dispatch before the current call returns.
//
// A queue already dispatched by the running flush is queued again: a
// message dead-lettered into it later in the flush (another queue's expired
// head) must still be dispatched.
func (b *Broker) markDirty(q *brokerQueue) {
	if q.deleted || q.dirty {
		return
	}
	q.dirty = true
	b.dirty = append(b.dirty, q)
}

// flush dispatches every dirty queue; caller holds the lock.
func (b *Broker) flush() {
	if len(b.dirty) > 0 || len(b.fired) > 0 {
		// Out of line: a call with nothing to dispatch, as many are, pays
		// no call for flush.
		b.dispatchDirty()
	}
}

// dispatchDirty is flush when there is something to dispatch.
func (b *Broker) dispatchDirty() {
	for {
		for b.flushed < len(b.dirty) {
			q := b.dirty[b.flushed]
			b.flushed++
			q.dirty = false
			if !q.deleted {
				q.Dispatch()
			}
		}
		scratch.Zero(b.dirty)
		b.dirty, b.flushed = b.dirty[:0], 0
		if len(b.fired) == 0 {
			break
		}
		// A fault's close requeues, which dirties queues again.
		b.applyFired()
	}
}

func (b *Broker) lookupVhost(name string) (v *vhost, err error) {
	if v = b.lastVhost; v == nil || v.name != name {
		v, err = b.findVhost(name) // out of line: the same vhost as last time costs no call
	}
	return
}

// findVhost is lookupVhost of a vhost other than the last one.
func (b *Broker) findVhost(name string) (*vhost, error) {
	v, ok := b.vhosts[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrNoVhost, name)
	}
	b.lastVhost = v
	return v, nil
}
