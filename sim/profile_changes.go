package sim

import (
	"slices"

	"github.com/amqpsim/amqpsim/queue"
)

// Change is one rule of Profile that some release changed, named for
// reports (the upgrade check attributes each difference it finds to the
// change that, undone, removes it). Its settings make the change: the
// fields it sets and their values from Since on.
type Change struct {
	Name  string  // e.g. "global_qos denied"
	Since Version // the first release with the change
	Why   string  // what it does to a client, in a sentence
	// Measured says how the rule was measured on a real broker where no
	// scenario of the library can show it (a raw socket, a large body),
	// and which test pins it; "" when a recording does, or nothing.
	Measured string
	settings []setting
}

// Undo returns p with this change as it is in base (an older release's
// profile).
func (c Change) Undo(p, base Profile) Profile {
	for _, s := range c.settings {
		s.copy(&p, &base)
	}
	return p
}

// apply makes the change on p, a profile of release v.
func (c Change) apply(p *Profile, v Version) {
	for _, s := range c.settings {
		s.set(p, v)
	}
}

// setting is one field of Profile a change sets.
type setting interface {
	// set gives the field its value on release v; copy gives it from's.
	set(p *Profile, v Version)
	copy(p, from *Profile)
}

// field is a setting of the field at returns, to the value value gives
// for a release.
type field[T any] struct {
	at    func(p *Profile) *T
	value func(v Version) T
}

func (f field[T]) set(p *Profile, v Version) { *f.at(p) = f.value(v) }
func (f field[T]) copy(p, from *Profile)     { *f.at(p) = *f.at(from) }

// to sets the field at returns to value.
func to[T any](at func(p *Profile) *T, value T) setting {
	return field[T]{at, func(Version) T { return value }}
}

// byRelease sets the field at returns to the value of each release, for
// a rule a later release changed again.
func byRelease[T any](at func(p *Profile) *T, value func(v Version) T) setting {
	return field[T]{at, value}
}

// Changes lists the rules the profiles differ by, oldest first: each
// release's profile is 3.10's with the changes made by then applied
// (Version.Profile). Where a rule's evidence is not on its Profile field,
// it is in the comment above its row.
func Changes() []Change { return slices.Clone(changes) }

var changes = []Change{
	{"per-queue consumer timeout", V3_12, "x-consumer-timeout and the consumer-timeout policy set a queue's consumer timeout", "",
		[]setting{to(func(p *Profile) *bool { return &p.QueueConsumerTimeout }, true)}},
	{"quorum basic.get without x-delivery-count 0", V3_12, "a quorum basic.get carries x-delivery-count only after a return", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.GetCountOnlyReturned }, true)}},
	// Read from the source (RS@v3.12.14 rabbit_classic_queue:capabilities/0;
	// not measured: 3.12 cannot be run here); 4.0.5 and 4.3.6 answer so.
	{"dead letters reach streams", V3_12, "a stream takes the messages dead-lettered to it at most once (by a classic queue, or a quorum queue without at-least-once); 3.10 drops them", "",
		[]setting{to(func(p *Profile) *bool { return &p.StreamTakesDeadLetters }, true)}},
	{"classic queues refuse memory-limit policies", V3_12, "a policy setting max-in-memory-length or max-in-memory-bytes no longer applies to classic queues", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.ClassicRefusesMemoryPolicies }, true)}},
	{"x-last-death headers", V3_13, "dead-lettered messages carry x-last-death-reason, -queue and -exchange", "",
		[]setting{to(func(p *Profile) *bool { return &p.LastDeathHeaders }, true)}},
	{"dead letters keep CC", V3_13, "a message dead-lettered with x-dead-letter-routing-key keeps its CC header (it still routes by that key alone)", "",
		[]setting{to(func(p *Profile) *bool { return &p.DeadLetterKeepsCC }, true)}},
	{"stream filtering", V3_13, "a stream consumer with x-stream-filter gets only the messages whose x-stream-filter-value it names; classic and quorum queues refuse x-stream-filter and x-stream-match-unfiltered", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.StreamFiltering }, true)}},
	{"stream conversion of x- arrays and tables", V3_13, "a stream's consumers get back x- headers of any type (an array or a table with a decimal inside crashes the publishing channel with 541 INTERNAL_ERROR), CC, and no x-death, x-exchange, x-routing-key or x-basic- header, and a binary comes back a longstr; 3.12 left out every array and table header", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.StreamConvertsXContainers }, true)}},
	{"unknown exchange type is a channel error", V3_13, "exchange.declare of an unknown type closes the channel with 406, not the connection with 503", "",
		[]setting{to(func(p *Profile) *bool { return &p.UnknownExchangeTypeChannelError }, true)}},
	{"a transaction holds its queues", V3_13, "a transaction's publish goes at tx.commit to the queues routing found when it was published: one deleted since fails the commit with 406 partial tx completion, and from 4.3 closes the connection with 506 RESOURCE_ERROR at that publish; up to 3.12 the commit looked the names up again, skipping a deleted queue and reaching one declared since under a name the default exchange routed to", "",
		[]setting{byRelease(func(p *Profile) *TxMissingQueue { return &p.TxCommitMissingQueue }, func(v Version) TxMissingQueue {
			if v.atLeast(4, 3) {
				return TxFailsOnMissingQueue
			}
			return TxRejectsMissingQueue
		})}},
	{"publish checks the message first", V4_0, "basic.publish refuses a bad reply-to, expiration or CC/BCC header before a topic permission or a user-id it refuses, and the topic permission covers the CC and BCC keys", "",
		[]setting{to(func(p *Profile) *bool { return &p.PublishChecksMessageFirst }, true)}},
	// 3.13 not read; RS@v4.0.5 rabbit_fifo sets delivery_count from the
	// annotation at enqueue.
	{"quorum queues read a dead letter's delivery count", V4_0, "a message dead-lettered by basic.nack or basic.reject, or after a channel that held it closed (in 4.3: after a failed delivery), reaches a quorum queue counted: its first delivery there is redelivered, with x-delivery-count", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.QuorumReadsDeliveryCount }, true)}},
	// Stream rules, as the library recorded on 4.0.5 and 4.3.6 shows them
	// (stream-*.txt). A rule the two releases share starts at 4.0 (3.12,
	// 3.13, 4.1 and 4.2 cannot be run here) unless the source says
	// otherwise. Recorded: stream-consume-checks.txt and
	// stream-offset-errors.txt on 4.0.5 and 4.3.6 (a client's
	// documentation quotes 3.13.7 with 3.10's text).
	{"stream consume texts", V4_0, "basic.consume on a stream is refused with texts that name a \"stream queue\"", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.StreamQueueTexts }, true)}},
	// Recorded: stream-settle.txt on 4.0.5 and 4.3.6.
	{"stream nack, reject and recover", V4_0, "basic.nack, basic.reject and basic.recover of a stream's deliveries settle them as basic.ack does instead of closing the connection", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.StreamAnySettlement }, true)}},
	// Recorded: stream-consume-args.txt on 4.0.5 and 4.3.6; 4.0
	// removed classic queue mirroring (release-notes/4.0.1.md).
	{"x-cancel-on-ha-failover ignored", V4_0, "basic.consume takes x-cancel-on-ha-failover on any queue and ignores it", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.NoHAFailoverArg }, true)}},
	// Measured on the segment files of 4.0.5 and 4.3.6 (queue's
	// TestStreamChunkSizes), the format read in mc_amqpl and mc_amqp;
	// 3.13's message containers may have made the change, unmeasured.
	// amqp10_framing:encode_described/3 omits the trailing nulls and
	// mc_amqpl:convert_to/3 makes reply-to an address from v4.2.0 on
	// (v4.1.8 has neither).
	{"stream messages as message containers", V4_0, "a stream stores a message as 4.0's message containers convert it (a header section; x- headers, CC and type as annotations; app-id as group-id; from 4.2 without the properties' trailing nulls and with reply-to as a /queues/ address), which sets where its segments roll and what x-max-length-bytes keeps", "",
		[]setting{byRelease(func(p *Profile) *queue.StreamFormat { return &p.Queue.StreamFormat }, func(v Version) queue.StreamFormat {
			if v.atLeast(4, 2) {
				return queue.StreamMC42
			}
			return queue.StreamMC40
		})}},
	// Recorded: races/stream-retention-age-at-attach.txt and
	// races/stream-retention-bytes-at-attach.txt on 4.0.5 and 4.3.6,
	// the outcome an idle broker gives.
	{"stream reader starts before retention", V4_0, "a stream consumer whose attach opens a segment reads the segments that retention then deletes", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.StreamReadBeforeRetention }, true)}},
	{"publisher's x-death ignored", V4_0, "an x-death header set by a publisher is overwritten, not extended", "",
		[]setting{to(func(p *Profile) *bool { return &p.IgnorePublisherDeaths }, true)}},
	{"max_message_size 16 MiB", V4_0, "a larger message closes the channel with 406",
		"measured on 4.0.5 and 4.3.6 with amqp091-go: a 16777217-byte body closes the channel with 406 \"message size 16777217 is larger than configured max size 16777216\", 16777216 bytes go through; 3.10.8 takes both (TestMaxMessageSize40)",
		[]setting{to(func(p *Profile) *uint64 { return &p.MaxMessageSize }, uint64(16777216))}},
	{"quorum delivery limit 20", V4_0, "quorum queues dead-letter or drop a message returned more than 20 times, and requeue to the head", "",
		[]setting{to(func(p *Profile) *int64 { return &p.Queue.DefaultDeliveryLimit }, int64(20))}},
	{"quorum priorities", V4_0, "quorum queues order messages by priority (two levels in 4.0-4.2, 0..31 in 4.3)", "",
		[]setting{byRelease(func(p *Profile) *queue.QuorumPriorities { return &p.Queue.QuorumPriorities }, func(v Version) queue.QuorumPriorities {
			if v.atLeast(4, 3) {
				return queue.StrictQuorumPriorities
			}
			return queue.TwoQuorumPriorities
		})}},
	{"quorum single active consumer by priority", V4_0, "on a quorum single active consumer queue a consumer of higher x-priority takes over once the active one has settled what it holds, and the next active consumer is the waiting one of highest priority, not the first registered", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.QuorumSACPriority }, true)}},
	{"consumer_max_per_channel", V4_0, "with consumer_max_per_channel set, a basic.consume beyond it closes the connection with 530", "",
		[]setting{to(func(p *Profile) *bool { return &p.ConsumerMaxPerChannel }, true)}},
	{"refusals name the permission", V4_0, "a 403 ACCESS_REFUSED for a missing permission starts with it: \"configure access to queue ...\"", "",
		[]setting{to(func(p *Profile) *bool { return &p.AccessRefusalNamesPermission }, true)}},
	{"ANONYMOUS mechanism", V4_0, "connection.start offers ANONYMOUS, which logs in as guest",
		"measured on 3.10.8, 4.0.5 and 4.3.6 with a raw socket (TestMechanismsAnonymous40, TestServerAnonymousLogin40)",
		[]setting{byRelease(func(p *Profile) *string { return &p.Mechanisms }, func(v Version) string {
			if v.atLeast(4, 3) {
				return "PLAIN AMQPLAIN ANONYMOUS"
			}
			return "PLAIN ANONYMOUS AMQPLAIN"
		})}},
	{"AMQP 1.0 protocol header", V4_0, "a protocol header other than 0-9-1's is answered with AMQP 1.0's SASL header, and 0-8's no longer starts AMQP 0-8",
		"measured on 3.10.8, 4.0.5 and 4.3.6 with a raw socket (TestProtocolHeaderAnswers, TestServerProtocolHeaderPerProfile)",
		[]setting{to(func(p *Profile) *bool { return &p.AMQP08 }, false),
			to(func(p *Profile) *bool { return &p.AMQP10 }, true),
			to(func(p *Profile) *[8]byte { return &p.RefusalHeader }, amqp10SASLHeader)}},
	// Quorum queues and dead-lettering, as the library recorded on
	// 4.0.5 and 4.3.6 shows them. A rule the two releases share starts
	// at 4.0 (3.12, 3.13, 4.1 and 4.2 cannot be run here). Recorded:
	// quorum-redeclare.txt on 4.0.5 and 4.3.6.
	{"x-queue-type defaults to classic", V4_0, "a redeclaration of another queue type without x-queue-type is refused as \"received 'classic' but current is 'quorum'\"", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.ImplicitQueueType }, true)}},
	// Recorded: quorum-close-return-order.txt on 4.0.5 and 4.3.6;
	// rabbit_fifo:apply/3 (#checkout{} with a two-element spec, IsV4)
	// keys a new consumer by the Raft index, and handle_down/3
	// returns consumer by consumer in key order.
	{"quorum close returns by consumer", V4_0, "a quorum queue takes back a closed channel's messages consumer by consumer in registration order, basic.get ones last (3.10: basic.get ones first, consumers by tag)", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.ReturnsByConsumerKey }, true)}},
	{"management bodies up to 20 MB", V4_0, "the management HTTP API reads request bodies up to 20,000,000 bytes, where 3.10 refuses one over the 8,000,000 bytes it reads at once",
		"measured on 3.10.8 (8,000,001 bytes taken, 8,100,000 refused); 20,000,000 read in 4.0.5's and 4.3.6's beams (TestBodyOverTheReleaseLimit)",
		[]setting{to(func(p *Profile) *int64 { return &p.HTTPMaxBody }, int64(20000000))}},
	{"frame_max at least 8192", V4_1, "frames up to 8192 bytes are accepted before connection.tune-ok, and a tune-ok asking for a frame_max under 8192 is refused",
		"measured on 3.10.8, 4.0.5 and 4.3.6 with a raw socket: 4.3.6 drops a tune-ok of 4096 or 8191 (TestTuneOkFrameMaxMinimum)",
		[]setting{to(func(p *Profile) *uint32 { return &p.FrameMinSize }, uint32(8192))}},
	{"mandatory reply-to routed", V4_2, "a mandatory publish to a direct reply-to name is not returned", "",
		[]setting{to(func(p *Profile) *bool { return &p.ReplyToMandatoryRouted }, true)}},
	{"basic.get on quorum SAC text", V4_2, "basic.get on a quorum single active consumer queue is still refused with 405, its text naming the type as <<\"quorum\">>", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.SACGetNamesQueueType }, true)}},
	// Recorded: stream-declare-crash.txt and stream-offset-errors.txt
	// on 4.3.6 (4.0.5 still crashes). The fix is rabbitmq-server
	// #16284 (check_max_age/1's regex wants a digit), merged on
	// 2026-05-01 with no backport label: the 4.1 and 4.2 profiles
	// (4.1.8, 4.2.0) are taken to predate it.
	{"x-max-age parse errors refused", V4_3, "an x-max-age or x-stream-offset interval that does not start with a digit is refused with 406 instead of closing the connection with 541", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.MaxAgeNoCrash }, true)}},
	// Recorded: stream-redeclare.txt on 4.3.6 (4.0.5 compares the
	// strings). rabbitmq-server#8509 asked for it and was still
	// discussed in August 2026: 4.1 and 4.2 are taken to compare
	// strings.
	{"x-max-age compared in milliseconds", V4_3, "a stream redeclared with an equal x-max-age in other units (\"60m\" for \"1h\") is accepted, and a different one is reported in milliseconds", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.MaxAgeComparedInMs }, true)}},
	// Recorded: stream-read-ahead.txt and stream-retention-bytes.txt
	// on 4.3.6 (4.0.5 reads on), the rule read in osiris 1.13.1;
	// 4.1 and 4.2 are taken to read on as 4.0.
	{"stream read-ahead crash", V4_3, "a stream consumer that read a segment's first messages and went on into a segment holding only an attach's snapshot closes its connection with 541 at the next publish if it has credit", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.StreamReadAheadCrash }, true)}},
	{"global_qos denied", V4_3, "basic.qos global=true sets the per-consumer prefetch instead of a channel-wide limit; permit the feature to keep it", "",
		[]setting{to(func(p *Profile) *bool { return &p.GlobalQosDenied }, true)}},
	{"consumer timeout on quorum queues only", V4_3, "classic queues have no consumer timeout and refuse x-consumer-timeout", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.ConsumerTimeoutQuorumOnly }, true)}},
	{"quorum queues time deliveries out", V4_3, "a quorum queue takes back a delivery unacked past the consumer timeout at once, not at a channel tick, and sends the consumer basic.cancel instead of closing the channel; the consumer stays and gets messages again once the client has settled the timed-out tags", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.QuorumConsumerTimeout }, true)}},
	{"basic.reject and basic.nack counted apart", V4_3, "on quorum queues only basic.reject and channel closes count towards the delivery limit and x-delivery-count; x-acquired-count counts every return", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.SplitDeliveryCount }, true)}},
	{"quorum purge takes dead letters", V4_3, "queue.purge of a quorum queue also drops the at-least-once dead letters it holds, and purge-ok counts them", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.QuorumPurgeTakesDeadLetters }, true)}},
	{"quorum queues expire every head", V4_3, "a quorum queue's message expires at its TTL when it is the head of the returned messages or of its priority level, no longer waiting behind a live returned message or a live message of a higher priority", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.QuorumExpiresEveryHead }, true)}},
	{"quorum bytes count properties", V4_3, "a quorum queue counts a message's encoded properties (2 bytes with none) with its body against x-max-length-bytes, so the limit keeps fewer messages", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.QuorumCountsProperties }, true)}},
	// Recorded on 4.3.6 (4.0.5 as 3.10.8): dlx-reject-with-routing-key,
	// dlx-x-death-counts-cycle, maxlen-drop-head-dlx,
	// ttl-requeue-keeps-expiry and dlx-reject-counts-delivery (a
	// channel close counts, basic.nack does not, a quorum queue's
	// dead letter carries its count, a dead letter handed straight to
	// a waiting consumer is not redelivered). Source:
	// rabbitmq-server#15020 ("4.3: Implement AMQP-1.0 delivery-count
	// for CQs") and #15387 (basic.reject counts, basic.nack does not).
	{"classic delivery-count", V4_3, "a message a client rejected with basic.reject (not basic.nack), or held on a channel that closed, counts a failed delivery, kept when it is dead-lettered: a classic queue that stores it delivers it as redelivered, even the first time", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.ClassicDeliveryCount }, true)}},
	{"x-queue-version 2 only", V4_3, "x-queue-version 1 is refused", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.OnlyQueueVersion2 }, true)}},
	{"passive declare needs a permission", V4_3, "a passive queue.declare or exchange.declare without any permission on the name is refused with 403, naming configure", "",
		[]setting{to(func(p *Profile) *bool { return &p.PassiveDeclareNeedsPermission }, true)}},
	{"x-queue-mode unchecked", V4_3, "x-queue-mode takes any value", "",
		[]setting{to(func(p *Profile) *bool { return &p.Queue.QueueModeUnchecked }, true)}},
	{"content sizes checked", V4_3, "a content header announcing more than 512 MiB, or a body frame longer than the rest of the body, closes the connection with 501",
		"measured on 3.10.8, 4.0.5 and 4.3.6 with a raw socket (TestContentLongerThanDeclared)",
		[]setting{to(func(p *Profile) *bool { return &p.StrictContentSize }, true)}},
	{"at most two '#' in a topic binding key", V4_3, "a topic binding key with more than two \"#\" words is refused with 406, over AMQP and in a definitions import",
		"recorded on 3.10.8, 4.0.5 and 4.3.6 (topic-hash-wildcard-limit.txt); the import's refusal measured with rabbitmqctl import_definitions and POST /api/definitions on 4.3.6",
		[]setting{to(func(p *Profile) *int { return &p.TopicMaxHashWords }, 2)}},
	{"topic permissions need the exchange", V4_3, "rabbitmqctl set_topic_permissions refuses an exchange that does not exist",
		"measured with rabbitmqctl on 3.10.8, 4.0.5 and 4.3.6 (TestTopicPermissionsNeedTheExchangeFrom43)",
		[]setting{to(func(p *Profile) *bool { return &p.TopicPermissionsNeedExchange }, true)}},
	{"consumers of a vhost need access", V4_3, "GET /api/consumers/VHOST answers 404 to a user who neither has permissions in the vhost nor the monitoring or administrator tag",
		"measured twice on 4.3.6 with the management plugin; 3.10.8's answer recorded in mgmt/testdata/rabbitmq (TestConsumersOfAVhostNeedAccessFrom43)",
		[]setting{to(func(p *Profile) *bool { return &p.ConsumersNeedVhost }, true)}},
}
