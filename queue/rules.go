package queue

// Rules are the queue behaviours that differ between RabbitMQ releases.
// The zero value is RabbitMQ 3.10's; sim's version profiles fill them in
// (sim/profile.go, which cites the rabbitmq-server source of each).
type Rules struct {
	// GetCountOnlyReturned makes a quorum queue's basic.get add the
	// x-delivery-count header only once the count is above 0, as a
	// consumer delivery does (3.12+); 3.10 adds it to every get, 0 on
	// the first.
	GetCountOnlyReturned bool
	// DefaultDeliveryLimit is a quorum queue's delivery limit when neither
	// x-delivery-limit nor a delivery-limit policy sets one; 0 means none
	// (3.10). With a default (4.0+), a negative limit disables it, and an
	// argument and a policy combine as the smaller unless either is
	// negative, then the larger.
	DefaultDeliveryLimit int64
	// QuorumPriorities is how a quorum queue orders messages by their
	// priority property.
	QuorumPriorities QuorumPriorities
	// SplitDeliveryCount is 4.3's split of a quorum message's counts:
	// acquired_count grows at every return, delivery_count only at a
	// failed delivery (basic.reject, a channel that closed); the limit is
	// compared with delivery_count, x-delivery-count shows it and
	// x-acquired-count shows the other.
	SplitDeliveryCount bool
	// QuorumPurgeTakesDeadLetters: queue.purge of a quorum queue also
	// drops the at-least-once dead letters it still holds and counts them
	// in purge-ok (RS@v4.3.5 rabbit_fifo apply_/3 #purge{}: NumReady +
	// DelayedLen + NumDlx, dlx_purge/1; v4.2.9 counts the ready messages
	// alone; recorded on 4.3.6: quorum-purge-dead-letters.txt, fuzz seed
	// 18498).
	QuorumPurgeTakesDeadLetters bool
	// QuorumExpiresEveryHead: a quorum queue expires the head of its
	// returns and the head of each priority level on its own, so an
	// expired message behind a live one of the returns or of a higher
	// priority goes when it expires; the TTL timer is set for the
	// earliest expiry among those heads. Up to 4.2 only the next message
	// to take expires. RS@v4.3.5 rabbit_fifo expire_shallow/2,
	// expire_batch/3 and timer_effect/2; v4.2.9 expire_msgs/4 looks at
	// get_next_msg/1 alone. Recorded on 4.3.6 (quorum-ttl-every-head.txt,
	// fuzz seed 31018).
	QuorumExpiresEveryHead bool
	// QuorumCountsProperties makes a quorum queue count a message's
	// properties with its body against x-max-length-bytes (and in
	// ReadyBytes): the encoded size of the property flags and properties
	// RabbitMQ stores it with (Message.StoredPropertiesSize: without a
	// publisher's BCC header; a dead-lettered message's as published,
	// without x-death), 2 bytes for none. The size is fixed at enqueue:
	// a return keeps it. RS@v4.3.5 rabbit_fifo:maybe_enqueue/8 counts
	// Size = MetaSize + BodySize from mc_amqpl:size/1 (MetaSize is the
	// stored properties_bin), where RS@v4.2.9 counts BodySize alone (the
	// change came with rabbit_fifo v8, rabbitmq-server#13885, first in
	// v4.3.0). Recorded on 4.3.6, and on 3.10.8 and 4.0.5 counting the
	// body alone (quorum-max-length-bytes-properties.txt). Classic queues
	// count the body alone on every release
	// (rabbit_amqqueue_process:message_properties/3; measured).
	QuorumCountsProperties bool
	// OnlyQueueVersion2 refuses x-queue-version 1 (4.3). The version
	// picks storage only: which one is the default (1 before 4.0, then 2)
	// changes nothing a client sees.
	OnlyQueueVersion2 bool
	// ConsumerTimeoutQuorumOnly is 4.3's move of the consumer timeout
	// into the queue: only quorum queues have one, so the channel's
	// consumer timeout no longer applies to deliveries from classic
	// queues and streams (Caps.ConsumerTimeout), and classic queues
	// refuse the x-consumer-timeout argument (RS@v4.3.5
	// rabbit_classic_queue:capabilities/0 does not list it;
	// release-notes/4.3.0.md "Consumer Timeouts are No Longer Evaluated
	// for Classic Queues and Streams").
	ConsumerTimeoutQuorumOnly bool
	// QuorumConsumerTimeout is 4.3's consumer timeout inside the quorum
	// queue (rabbit_fifo machine version 8; quorum_timeout.go), instead
	// of the channel's 406 at its tick (Caps.ConsumerTimeout is false).
	// Each delivery that must be acked, to a consumer or a basic.get, is
	// due back at its checkout plus a timeout fixed then: a consumer's
	// x-consumer-timeout argument (a consumer argument of quorum queues
	// only, a non-negative integer), else the smaller of the queue's
	// argument and consumer-timeout policy, else consumer_timeout. At
	// that moment, not at a tick, the queue takes the message back,
	// served first, x-acquired-count up and x-delivery-count not, and
	// the consumer, still registered (declare-ok counts it), gets nothing
	// until the client has settled every delivery that timed out, whose
	// tags the channel still takes: basic.ack, or a nack or reject
	// without requeue, resumes it at once; a requeue of those alone only
	// at its next settlement. A single active consumer left holding
	// nothing waits, and the next one not timed out becomes active. The
	// channel sends basic.cancel for the consumer (nowait) or, for a
	// consumer the client cancelled, a basic.get, or a client without
	// consumer_cancel_notify, closes with 406 "... Timeout value used:
	// -1 ms ...". Read in 4.3.6's rabbit_fifo (evaluate_consumer_timeout,
	// maybe_untimeout/2), rabbit_queue_type:consume/3 and
	// get_consumer_timeout/2, rabbit_channel:handle_queue_actions/2;
	// measured on 4.3.6 (scenarios/library/quorum-consumer-timeout*.txt;
	// the global consumer_timeout, read at basic.consume, with a probe
	// that set it to 3000 with rabbitmqctl eval).
	QuorumConsumerTimeout bool
	// SACGetNamesQueueType is the newer text for basic.get on a quorum
	// single active consumer queue: the queue type is printed with ~p
	// from rabbit_queue_type:short_alias_of/1, a binary, so it reads
	// <<"quorum">> (rabbit_channel:
	// unsupported_single_active_consumer_error/1, read in a 4.x
	// rabbit_channel). Recorded: quorum-single-active-consumer.txt, where
	// 4.3.6 writes <<"quorum">> and 4.0.5 still 3.10's "quorum queues".
	// From 4.2: the registry lookup short_alias_of/1 makes came with
	// queue types from plugins (rabbitmq-server#13905, merged May 2025,
	// after 4.1.0), the likeliest origin; the tag is not confirmed.
	SACGetNamesQueueType bool
	// QuorumSACPriority makes a quorum single active consumer queue
	// honour x-priority (4.0+): the consumer activated when the active
	// one goes is the waiting one of highest priority, then most credit,
	// then registered first; and a consumer of higher priority than the
	// active one takes over as soon as the active one holds no unsettled
	// message, the active one getting nothing new meanwhile. Without it
	// (3.10) the waiting consumers take over in registration order and
	// priority is ignored (quorum-single-active-consumer.txt).
	QuorumSACPriority bool
	// The rules from here to StreamFiltering were measured on RabbitMQ
	// 4.0.5 and 4.3.6 (scenarios/library/stream-*.txt); sim/profile.go
	// says from which release each holds.

	// StreamQueueTexts is 4.0's wording of basic.consume's refusals on a
	// stream: "consumer prefetch count is not set for stream queue 's'
	// in vhost '/'" and "automatic acknowledgement not supported by
	// stream queue 's' in vhost '/'" (rabbit_stream_queue:consume/3
	// formats "stream ~ts" with rabbit_misc:rs/1); 3.10 wrote "for
	// 'queue 's' in vhost '/''" and "by stream queues queue 's' ..."
	// (stream-consume-checks.txt, stream-offset-errors.txt).
	StreamQueueTexts bool
	// StreamAnySettlement makes basic.nack, basic.reject and
	// basic.recover settle a stream's deliveries as basic.ack does,
	// giving credit back (4.0+: rabbit_stream_queue:settle/5, "all settle
	// reasons will give credit"); 3.10 closes the connection with 540
	// for nack and reject and crashes the channel (541) at recover
	// (stream-settle.txt).
	StreamAnySettlement bool
	// NoHAFailoverArg drops x-cancel-on-ha-failover from the consumer
	// arguments RabbitMQ knows (4.0, which removed classic queue
	// mirroring): a queue of any type takes it and ignores it, where 3.10
	// refuses it on quorum queues and streams and wants a bool on a
	// classic queue (stream-consume-args.txt).
	NoHAFailoverArg bool
	// MaxAgeNoCrash refuses an x-max-age, or an x-stream-offset interval,
	// that does not start with a digit ("", "h", "-1h", "FIRST") as any
	// other invalid one, 406 invalid_max_age at queue.declare and 406
	// invalid_stream_offset_arg at basic.consume, where 3.10 and 4.0 crash
	// their parser and close the connection with 541
	// (stream-declare-crash.txt, stream-offset-errors.txt).
	MaxAgeNoCrash bool
	// MaxAgeComparedInMs compares a stream's x-max-age on redeclaration
	// in milliseconds, so that "60m" is "1h", and the error prints both
	// so: "received '7200000' but current is '3600000'" (stream-
	// redeclare.txt). A value that is no valid age is compared as it is;
	// the queue keeps the argument as declared.
	MaxAgeComparedInMs bool
	// StreamFormat is how the release stores a message in a stream,
	// which sets the size of its chunk (StreamFormat's values; measured
	// on the segment files of 3.10.8, 4.0.5 and 4.3.6,
	// TestStreamChunkSizes), and so where segments roll and what
	// x-max-length-bytes keeps.
	StreamFormat StreamFormat
	// StreamReadBeforeRetention makes a consumer that attaches to a
	// stream find its start before the retention evaluation its attach
	// triggers (when it opens a segment) deletes anything, and read the
	// deleted segments whole, as a 4.x reader that has the segment file
	// open usually does (races/stream-retention-age-at-attach.txt,
	// races/stream-retention-bytes-at-attach.txt: the evaluation runs in
	// another process, and under load can win). A 3.10 consumer usually
	// starts in what the evaluation left.
	StreamReadBeforeRetention bool
	// StreamReadAheadCrash crashes the channel of a consumer that read a
	// segment's chunks of messages and, with credit left, went on into
	// the next segment while it held only the snapshot chunk an attach
	// wrote, when the next chunk is written, if its read-ahead buffer
	// from the previous segment starts at or before that chunk's
	// position: the connection closes with 541 (osiris 1.13.1's stale
	// buffer: stream.staleReadAhead; measured on 4.3.6:
	// stream-retention-bytes.txt, stream-read-ahead.txt and the races
	// folder). 4.0.5 reads on.
	StreamReadAheadCrash bool

	// StreamFiltering turns on 3.13's stream filtering: a stream reads
	// x-stream-filter-value from published messages' headers and gives a
	// consumer with x-stream-filter only the messages whose value it
	// names (and, with x-stream-match-unfiltered, those with none); it
	// checks x-stream-filter-size-bytes at declare. x-stream-filter and
	// x-stream-match-unfiltered become consumer arguments of streams, which
	// classic and quorum queues refuse (stream-consume-args.txt, measured
	// on 4.0.5 and 4.3.6; RS@v3.13.7's stream capabilities/0 list them as
	// consumer_arguments, as at 4.x). Before 3.13 those
	// arguments and the header are ignored (stream-filter-310.txt,
	// recorded on 3.10.8). RS@v3.13.7 rabbit_stream_queue.erl:consume/3
	// (filter_spec) and capabilities/0.
	StreamFiltering bool
	// StreamConvertsXContainers: converting a message for a stream
	// converts its x- headers' arrays and tables too (3.13's mc_amqpl
	// stores x- headers as message annotations, recursively), where 3.10
	// leaves out every array and table header (ConversionCrashes); and
	// what the stream's consumers get back is mc_amqpl's round trip, not
	// rabbit_msg_record's (storedHeader, basicFromHeaders).
	StreamConvertsXContainers bool
	// QueueModeUnchecked takes any x-queue-mode, of any type, on a
	// classic queue (4.3, where classic queues have one storage); a
	// redeclaration still compares it and quorum queues and streams
	// still refuse it (declare-invalid-arguments.txt, recorded on 4.3.6).
	QueueModeUnchecked bool

	// ImplicitQueueType makes a declaration without x-queue-type one of
	// the default type, classic (4.0+): the channel adds the argument
	// before the equivalence check (rabbit_amqqueue:
	// augment_declare_args/5), so a redeclaration of another type names
	// both, "received 'classic' but current is 'quorum'", where 3.10
	// wrote "received none but current is the value 'quorum' of type
	// 'longstr'" (quorum-redeclare.txt).
	ImplicitQueueType bool
	// ReturnsByConsumerKey is the order in which a quorum queue takes
	// back a closed channel's messages from 4.0: each consumer's, the
	// consumers in registration order, then the basic.get ones; 3.10
	// returns the basic.get ones first, then each consumer's by consumer
	// tag (quorum-close-return-order.txt). Either way each consumer's
	// come in the order it took them. rabbit_fifo keys a consumer by the
	// Raft index of its checkout from 4.0, by {Tag, Pid} before, and
	// returns consumer by consumer in key order.
	ReturnsByConsumerKey bool
	// ClassicDeliveryCount is 4.3's delivery-count on classic queues: a
	// basic.reject, with requeue or without, and a channel that closed
	// holding the message count a failed delivery (Message.Failures), and
	// a classic queue stores a message with failed deliveries as
	// delivered, so it is redelivered even on its first delivery from
	// that queue: one dead-lettered after a basic.reject arrives
	// redelivered, one after a basic.nack does not
	// (dlx-reject-with-routing-key.txt), and one handed straight to a
	// waiting consumer of an empty queue does not either
	// (dlx-reject-counts-delivery.txt).
	ClassicDeliveryCount bool
	// ClassicRefusesMemoryPolicies adds max-in-memory-length and
	// max-in-memory-bytes (quorum queue keys) to the policy keys a classic
	// queue does not support, so that a policy setting either no longer
	// applies to it (Caps.TakesPolicy): RS@v3.12.14
	// rabbit_classic_queue:capabilities/0 lists them, RS@v3.11.28 does not.
	ClassicRefusesMemoryPolicies bool
	// QuorumReadsDeliveryCount: a quorum queue's dead letter carries the
	// message's delivery_count header as its delivery-count annotation
	// (Message.Failures), and a quorum queue that stores a message with
	// one sets its delivery_count from it, with no acquired_count: its
	// first delivery is redelivered, with x-delivery-count (and in 4.3
	// x-acquired-count) that count (rabbit_fifo:maybe_set_msg_delivery_count/2
	// and rabbit_fifo_client:add_delivery_count_header/2, RS@v4.0.5 and
	// v4.3.5). Before 4.3 a #discard{} (basic.nack or basic.reject
	// without requeue) and a closed channel's return count in
	// delivery_count; in 4.3 a failed delivery does (SplitDeliveryCount). Recorded on 3.10.8, 4.0.5 and
	// 4.3.6 (quorum-dead-letter-delivery-count.txt; found by amqpsim fuzz,
	// seed 5042).
	QuorumReadsDeliveryCount bool
}

// QuorumPriorities names a quorum queue's treatment of message priorities.
type QuorumPriorities uint8

const (
	// NoQuorumPriorities ignores priorities: one FIFO (3.x).
	NoQuorumPriorities QuorumPriorities = iota
	// TwoQuorumPriorities has two levels, priority > 4 high and the rest
	// normal, high taken twice for every normal one unless the normal one
	// is older (4.0–4.2, rabbit_fifo_q).
	TwoQuorumPriorities
	// StrictQuorumPriorities has 32 levels, 0..31 (higher clamped to 31,
	// none counted as 4), always highest first (4.3, rabbit_fifo_pq).
	StrictQuorumPriorities
)
