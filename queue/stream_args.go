package queue

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// streamArgs are the arguments a RabbitMQ 3.10.8 stream accepts, with their
// value checks, in the order a redeclaration compares them (x-queue-type
// before x-max-age: stream-redeclare.txt). Any other argument that some
// queue type knows is refused (notStream); unknown ones are stored and
// ignored (x-stream-filter-size-bytes, a 3.13 argument, among them:
// stream-declare-checks.txt).
var streamArgs = []argSpec{
	{"x-max-length-bytes", checkNonNegInt},
	{"x-queue-type", checkQueueType},
	{"x-max-age", checkMaxAge},
	{"x-stream-max-segment-size-bytes", checkNonNegInt},
	{"x-initial-cluster-size", checkPositiveInt},
	{"x-queue-leader-locator", nil},
}

// notStream are the arguments of classic and quorum queues a RabbitMQ
// 3.10.8 stream refuses whatever their value, "invalid arg '<k>' for queue
// '<q>' in vhost '<v>' of queue type rabbit_stream_queue"
// (stream-declare-refused.txt). RabbitMQ reports the first one in the
// table's wire order, which amqp091-go makes random; amqpsim, whose wire
// writes tables sorted, reports the first in key order.
var notStream = []string{
	"x-dead-letter-exchange", "x-dead-letter-routing-key", "x-dead-letter-strategy",
	"x-delivery-limit", "x-expires", "x-max-in-memory-bytes", "x-max-in-memory-length",
	"x-max-length", "x-max-priority", "x-message-ttl", "x-overflow",
	"x-queue-master-locator", "x-queue-mode", "x-queue-version",
	"x-quorum-initial-group-size", "x-single-active-consumer",
}

// maxSegmentSize is ?MAX_STREAM_MAX_SEGMENT_SIZE: a larger
// x-stream-max-segment-size-bytes is refused after the property checks
// (rabbit_stream_queue:check_max_segment_size_bytes/1; 3000000000 is
// accepted and 3000000001 refused: stream-declare-checks.txt).
const maxSegmentSize = 3_000_000_000

// defaultSegmentSize is osiris's default max_segment_size_bytes (500 MB).
const defaultSegmentSize = 500_000_000

// validateStream is the declaration of a stream in RabbitMQ 3.10.8's order,
// as measured (stream-declare-checks.txt): the values of the arguments it
// accepts, the arguments of other queue types, the properties
// (auto-delete, exclusive, durable), then the segment size's upper bound.
func (d *declared) validateStream() error {
	if err := d.validateArgs(streamArgs); err != nil {
		return err
	}
	keys := slices.Clone(notStream)
	slices.Sort(keys)
	if err := d.refuse(keys, "rabbit_stream_queue"); err != nil {
		return err
	}
	if err := d.checkReplicatedProperties(); err != nil {
		return err
	}
	if n, ok := protocol.Int(d.opts.Args["x-stream-max-segment-size-bytes"]); ok && n > maxSegmentSize {
		return protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDeclare, "Exceeded max value for x-stream-max-segment-size-bytes")
	}
	// A broker with stream filtering (3.13+) checks the bloom filter's
	// size, 16 to 255 bytes, text with its two blanks
	// (rabbit_stream_queue:check_filter_size/1 at 3.13); 3.10 ignores
	// the argument (stream-filter-310.txt).
	if v, ok := d.opts.Args["x-stream-filter-size-bytes"]; ok && d.opts.Rules.StreamFiltering {
		if n, isInt := protocol.Int(v); isInt && (n > 255 || n < 16) {
			return protocol.Errorf(protocol.PreconditionFailed, protocol.QueueDeclare, "Invalid value for  x-stream-filter-size-bytes")
		}
	}
	return nil
}

// errInvalidMaxAge is check_max_age's {error, invalid_max_age}.
type errInvalidMaxAge struct{}

func (errInvalidMaxAge) Error() string { return "invalid_max_age" }

var maxAgeForm = regexp.MustCompile(`^([0-9]*)(.*)$`)

// ParseMaxAge reads a retention age as rabbit_amqqueue:check_max_age/1 does
// in RabbitMQ 3.10: a positive decimal number and one unit, Y (365 days), M
// (30 days), D, h, m or s ("7D", "1h", "01h"; not "1d", "1h1m", "1.5h" or
// "0s"). A string that does not start with a digit ("", "h", "-1h", " 1h")
// crashes RabbitMQ's parser (list_to_integer of ""); ParseMaxAge returns
// the 541 INTERNAL_ERROR that closes the connection then.
func ParseMaxAge(s string) (time.Duration, error) {
	m := maxAgeForm.FindStringSubmatch(s)
	if m[1] == "" {
		return 0, protocol.ChannelCrash()
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n <= 0 {
		return 0, errInvalidMaxAge{}
	}
	unit := map[string]time.Duration{
		"Y": 365 * 24 * time.Hour, "M": 30 * 24 * time.Hour, "D": 24 * time.Hour,
		"h": time.Hour, "m": time.Minute, "s": time.Second,
	}[m[2]]
	if unit == 0 || n > int64(1<<62)/int64(unit) {
		return 0, errInvalidMaxAge{}
	}
	return time.Duration(n) * unit, nil
}

// checkMaxAge is rabbit_amqqueue:check_max_age_arg/2: a longstr that
// ParseMaxAge reads. The crash of RabbitMQ's parser is not an "invalid arg"
// but the 541 itself, which validateArgs cannot return; validateStream's
// caller finds it with maxAgeCrash first.
func checkMaxAge(v any, _ protocol.Table) string {
	s, ok := v.(string)
	if !ok {
		return unacceptable(v)
	}
	if _, err := ParseMaxAge(s); err != nil {
		return "invalid_max_age"
	}
	return ""
}

// maxAgeInMs returns args with a valid x-max-age written as its
// milliseconds ("1h" is "3600000"), still a string, as 4.3 compares it;
// args itself is not modified.
func maxAgeInMs(args protocol.Table) protocol.Table {
	s, ok := args["x-max-age"].(string)
	if !ok {
		return args
	}
	d, err := ParseMaxAge(s)
	if err != nil {
		return args
	}
	out := maps.Clone(args)
	out["x-max-age"] = strconv.FormatInt(d.Milliseconds(), 10)
	return out
}

// maxAgeCrash returns the 541 of an x-max-age that crashes RabbitMQ's
// parser, or nil.
func maxAgeCrash(args protocol.Table) error {
	s, ok := args["x-max-age"].(string)
	if !ok {
		return nil
	}
	if _, err := ParseMaxAge(s); err != nil {
		if pe, isProto := err.(*protocol.Error); isProto {
			return pe
		}
	}
	return nil
}

// OffsetKind is where a stream consumer starts reading.
type OffsetKind uint8

const (
	// OffsetNext starts at the next message published (the default).
	OffsetNext OffsetKind = iota
	// OffsetFirst starts at the oldest message retained.
	OffsetFirst
	// OffsetLast starts at the last chunk written; each publish is a chunk
	// of its own in amqpsim, so at the last message.
	OffsetLast
	// OffsetAt starts at offset N; messages below it are skipped, and a
	// consumer beyond the end waits for offset N.
	OffsetAt
	// OffsetTime starts at the first message written at or after Time
	// (a timestamp, or now minus an interval such as "1h").
	OffsetTime
)

// Offset is a stream consumer's x-stream-offset, parsed.
type Offset struct {
	Kind OffsetKind
	N    int64     // for OffsetAt
	Time time.Time // for OffsetTime, in milliseconds as RabbitMQ compares them
	// crash is set for a value RabbitMQ 3.10.8 accepts at basic.consume
	// and then crashes on when the reader starts (a double, a bool, void,
	// an array): the connection closes with 541 after the prefetch and
	// ack-mode checks.
	crash bool
}

// ParseOffset reads a stream consumer's x-stream-offset argument as
// RabbitMQ 3.10.8 does (rabbit_stream_queue:parse_offset_arg/1 and the
// consume-time check before it; stream-offsets.txt,
// stream-offset-errors.txt), with the rules r of the release. v is the
// argument's value and present whether it was given; now is the broker's
// wall-clock time, the base of an interval. "first", "last" and "next"
// (of any string type) name themselves; any integer type is an offset; a
// timestamp is seconds since the epoch; another string is an interval
// read as x-max-age is ("1h"), "invalid_stream_offset_arg" when it has no
// valid unit, and a 541 when it does not start with a digit ("FIRST",
// "") unless r.MaxAgeNoCrash. resource names the queue in the error.
func ParseOffset(r Rules, v any, present bool, now time.Time, resource string) (Offset, error) {
	if !present {
		return Offset{Kind: OffsetNext}, nil
	}
	switch x := v.(type) {
	case string:
		switch x {
		case "first":
			return Offset{Kind: OffsetFirst}, nil
		case "last":
			return Offset{Kind: OffsetLast}, nil
		case "next":
			return Offset{Kind: OffsetNext}, nil
		}
		d, err := ParseMaxAge(x)
		if pe, ok := err.(*protocol.Error); ok && !r.MaxAgeNoCrash {
			return Offset{}, pe
		}
		if err != nil {
			return Offset{}, protocol.Errorf(protocol.PreconditionFailed, protocol.BasicConsume,
				"invalid arg 'x-stream-offset' for %s: {invalid_stream_offset_arg,{longstr,%s}}", resource, erlangBinary(x))
		}
		return Offset{Kind: OffsetTime, Time: now.Add(-d).Truncate(time.Millisecond)}, nil
	case time.Time:
		return Offset{Kind: OffsetTime, Time: time.Unix(x.Unix(), 0)}, nil
	}
	if n, ok := protocol.Int(v); ok {
		return Offset{Kind: OffsetAt, N: n}, nil
	}
	return Offset{crash: true}, nil
}

// erlangBinary writes s as Erlang's ~p prints a binary: <<"1x">>, and
// <<>> when empty.
func erlangBinary(s string) string {
	if s == "" {
		return "<<>>"
	}
	return fmt.Sprintf("<<%q>>", s)
}

// Crashes reports whether starting a reader at o makes RabbitMQ 3.10.8's
// stream reader crash: the connection closes with 541 INTERNAL_ERROR, after
// basic.consume's other checks passed.
func (o Offset) Crashes() bool { return o.crash }

// CrashError is the 541 a crashing offset closes the connection with:
// 3.10.8's parser crashes on a string that does not start with a digit
// (stream-offset-errors.txt).
func (o Offset) CrashError() error { return protocol.ChannelCrash() }

// Filter is a stream consumer's RabbitMQ 3.13 filter (x-stream-filter and
// x-stream-match-unfiltered), read by ParseFilter.
type Filter struct {
	Values          []string
	MatchUnfiltered bool
}

// ParseFilter reads a consumer's filter arguments as RabbitMQ 3.13's
// rabbit_stream_queue:filter_spec/1 does: x-stream-filter is a
// string or an array whose string elements are kept; without it there is
// no filter, whatever x-stream-match-unfiltered says; that is a bool,
// false when missing or of another type. A 3.10 broker has no filtering
// and ignores both arguments (stream-filter-310.txt); the stream applies
// the filter only when Rules.StreamFiltering is set.
func ParseFilter(args protocol.Table) (Filter, bool) {
	var f Filter
	switch v := args["x-stream-filter"].(type) {
	case string:
		f.Values = []string{v}
	case []any:
		// filter_spec/1 folds the array into a list, newest first; the
		// order does not matter to a match.
		f.Values = []string{}
		for _, e := range v {
			if s, ok := e.(string); ok {
				f.Values = append(f.Values, s)
			}
		}
	default:
		return Filter{}, false
	}
	f.MatchUnfiltered, _ = args["x-stream-match-unfiltered"].(bool)
	return f, true
}

// matches reports whether a message with filter value v (has: it carries
// one) passes the filter: its value is one of the filter's, or it has none
// and the filter matches unfiltered messages.
func (f *Filter) matches(v string, has bool) bool {
	if !has {
		return f.MatchUnfiltered
	}
	return slices.Contains(f.Values, v)
}

// String describes the filter, for traces and errors.
func (f Filter) String() string {
	return fmt.Sprintf("filter %v match-unfiltered=%t", f.Values, f.MatchUnfiltered)
}
