package queue

import (
	"time"

	"github.com/amqpsim/amqpsim/protocol"
)

// Overflow behaviours of a queue with a length limit (x-overflow).
const (
	DropHead         = "drop-head"
	RejectPublish    = "reject-publish"
	RejectPublishDLX = "reject-publish-dlx"
)

// Limits are the queue's settings about time, size and dead-lettering:
// its arguments, combined with the policy that applies to it.
type Limits struct {
	MessageTTL     time.Duration // x-message-ttl; valid when HasMessageTTL
	HasMessageTTL  bool
	Expires        time.Duration // x-expires; 0 means none
	MaxLength      int64         // x-max-length; -1 means none
	MaxLengthBytes int64         // x-max-length-bytes; -1 means none
	Overflow       string        // x-overflow; DropHead by default
	// DeadLetterExchange is x-dead-letter-exchange ("" is the default
	// exchange); valid when HasDeadLetterExchange.
	DeadLetterExchange    string
	HasDeadLetterExchange bool
	// DeadLetterRoutingKey is x-dead-letter-routing-key; valid when
	// HasDeadLetterRoutingKey.
	DeadLetterRoutingKey    string
	HasDeadLetterRoutingKey bool
}

func readLimits(args protocol.Table) Limits {
	l := Limits{MaxLength: -1, MaxLengthBytes: -1, Overflow: DropHead}
	if n, ok := protocol.Int(args["x-message-ttl"]); ok {
		l.MessageTTL, l.HasMessageTTL = time.Duration(n)*time.Millisecond, true
	}
	if n, ok := protocol.Int(args["x-expires"]); ok {
		l.Expires = time.Duration(n) * time.Millisecond
	}
	if n, ok := protocol.Int(args["x-max-length"]); ok {
		l.MaxLength = n
	}
	if n, ok := protocol.Int(args["x-max-length-bytes"]); ok {
		l.MaxLengthBytes = n
	}
	if s, ok := args["x-overflow"].(string); ok {
		l.Overflow = s
	}
	l.DeadLetterExchange, l.HasDeadLetterExchange = args["x-dead-letter-exchange"].(string)
	l.DeadLetterRoutingKey, l.HasDeadLetterRoutingKey = args["x-dead-letter-routing-key"].(string)
	return l
}

// EffectiveLimits combines a queue's arguments with the definition of the
// policy that applies to it (keys without the x- prefix) as RabbitMQ
// 3.10's process_args_policy does: for message-ttl, expires, max-length
// and max-length-bytes the smaller value wins; for dead-letter-exchange,
// dead-letter-routing-key and overflow the queue's own argument wins.
func EffectiveLimits(args, policy protocol.Table) Limits {
	merged := protocol.Table{}
	for k, v := range args {
		merged[k] = v
	}
	for k, v := range policy {
		ak := "x-" + k
		cur, has := merged[ak]
		switch k {
		case "message-ttl", "expires", "max-length", "max-length-bytes":
			n, ok := protocol.Int(v)
			if !ok {
				continue
			}
			if m, isInt := protocol.Int(cur); has && isInt && m <= n {
				continue
			}
			merged[ak] = n
		case "dead-letter-exchange", "dead-letter-routing-key", "overflow":
			if !has {
				merged[ak] = v
			}
		}
	}
	return readLimits(merged)
}
