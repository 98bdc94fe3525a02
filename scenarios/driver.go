package scenarios

import (
	"errors"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// driver runs operations on one broker, the simulator or a real one. It
// translates and observes; the scenario logic (names, what clients hold,
// rendering) is the runner's. Names are the scenario's connection and
// channel names. A method only one op calls is in that op's file
// (op_conn.go, op_channel.go, op_close.go, op_advance.go, op_alarm.go,
// op_queue.go); ops.go says how ops run on a driver.
type driver interface {
	// connect opens a connection; a refused one is a *connRefused.
	connect(o Conn) error
	openChannel(conn, ch string) error
	closeChannel(ch string) error
	closeConn(conn string) error
	// do runs a channel operation. A Settle has its Tag resolved and Msg
	// empty, a Publish one body. The reply carries what the method's -ok
	// returned.
	do(ch string, op chanOp) (reply, error)
	advance(d time.Duration)
	// admin runs an operator step (policies, operator policies, users,
	// permissions) on the vhost "/".
	admin(op adminOp) error
	// alarm raises or clears a resource alarm.
	alarm(o Alarm) error
	// settle waits until the broker is quiet when wait is set, and returns
	// every frame pushed to a client since the last call, in order per
	// connection.
	settle(wait bool) []event
	// queueState observes a queue from outside the scenario's connections.
	queueState(queue string) (queueState, error)
	// fault stops, kills, starts or cuts off nodes of a cluster, or heals
	// a cut (cluster.go).
	fault(op faultOp) error
	// inject injects a fault (op_fault.go); a real broker refuses those
	// it cannot take with a *NotConfirmableError.
	inject(o Fault) error
	// leader returns where a queue's leader and members are (op_leader.go).
	leader(queue string) (leaderInfo, error)
	// classicHomes returns the home node of each of queues that is a
	// classic queue (cluster.go's orphanHeld).
	classicHomes(queues []string) (map[string]int, error)
	// finish closes everything the driver opened or created.
	finish() error
}

// reply is what a synchronous method answered.
type reply struct {
	queue            string // queue.declare-ok: the queue's name
	ready, consumers int    // queue.declare-ok
	count            int    // purge-ok, delete-ok
	got              bool   // get-ok (false: get-empty)
	get              event  // the get-ok, as a delivery
}

// queueState is a queue's counts as seen by an observer.
type queueState struct {
	status           string // "" (found), "not found" or "locked"
	ready, consumers int
	unacked          int // -1 when the driver cannot see it (real brokers)
}

// errRefused is returned by a driver when the client refuses an operation
// without sending anything, because the channel or connection is closed.
var errRefused = errors.New("refused: closed")

// errPending is returned by a driver for a method the broker has not
// answered yet and will answer later, if at all, as RabbitMQ answers some
// methods on a cluster only after a timeout (sim.ErrQueued): the step
// shows nothing; the answer, a channel.close or connection.close, shows
// under the step during which it arrives.
var errPending = errors.New("pending")

// errNotSent is returned by a runnerOp that sent nothing, for a reason
// its result lines give.
var errNotSent = errors.New("not sent")

// errProtocol wraps a protocol error the broker answered with; the close
// frame that carries it is among the events.
type errProtocol struct{ err error }

func (e errProtocol) Error() string { return e.err.Error() }
func (e errProtocol) Unwrap() error { return e.err }

type eventKind int

const (
	evDeliver eventKind = iota
	evReturn
	evConfirm
	evCancel
	evChannelClose
	evConnClose
	evBlocked   // connection.blocked, text the reason
	evUnblocked // connection.unblocked
	// evDropped is a connection that ended without a connection.close:
	// its node crashed, or hung; text says how (dropReset, dropTimeout,
	// or "" for a socket closed). Only cluster scenarios show it.
	evDropped
	// evLate is the late success of a method that was pending (errPending);
	// text is its step. The simulator has none.
	evLate
)

// How a connection dropped (evDropped's text): its socket was reset, or
// the client's heartbeat deadline passed.
const (
	dropReset   = "reset"
	dropTimeout = "timed out"
)

// event is one frame the broker pushed to a client.
type event struct {
	kind        eventKind
	conn, ch    string // scenario names; ch is "" for connection.close
	ctag        string
	tag         uint64
	redelivered bool
	multiple    bool
	nack        bool
	body        string
	exchange    string
	key         string
	left        int // get-ok message-count
	code        int
	text        string
	method      string
	headers     protocol.Table // a delivery's or get-ok's headers property
}

// Silent reports whether a broker pushes nothing of its own accord after
// op (a declare, a bind, a connection's open), so that a recording need
// not watch for a quiet window after it.
func Silent(op Op) bool { return !waits(op) }

// waits reports whether an operation can make the broker push frames (so a
// real broker must be watched until it is quiet after it).
func waits(op Op) bool {
	if d, ok := op.(DeclareQueue); ok && d.NoWait {
		// No declare-ok: a refusal comes as a channel.close after it.
		return true
	}
	_, quiet := op.(silent)
	return !quiet
}
