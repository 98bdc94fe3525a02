package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/amqpsim/amqpsim/queue"
)

// Version names the RabbitMQ release series a Broker simulates
// (Config.Version). The zero value is DefaultVersion.
type Version struct{ major, minor uint8 }

// The release series amqpsim has a profile of. 3.10, 4.0 and 4.3 are
// measured: every scenario of the library was recorded on RabbitMQ
// 3.10.8, 4.0.5 and 4.3.6, and each file holds the three releases'
// answers. 3.12, 3.13, 4.1 and 4.2 follow the rabbitmq-server source at
// the tag each Profile names where 4.0.5 and 4.3.6 differ.
var (
	V3_10 = Version{3, 10}
	V3_12 = Version{3, 12}
	V3_13 = Version{3, 13}
	V4_0  = Version{4, 0}
	V4_1  = Version{4, 1}
	V4_2  = Version{4, 2}
	V4_3  = Version{4, 3}
)

// DefaultVersion is the profile of a Config without a Version: 4.3, the
// newest release recorded (the scenario library in scenarios/library/ is
// recorded on 3.10.8, 4.0.5 and 4.3.6; each file holds the three
// releases' answers), so that what the simulator does by default is
// measured, not read. 3.10 and 4.0 are one option away:
// sim.Config{Version: sim.V3_10} (in process, or through
// amqptest.WithConfig), amqpsim serve --rabbitmq 3.10.
var DefaultVersion = V4_3

// Versions returns the versions that have a profile, oldest first.
func Versions() []Version { return []Version{V3_10, V3_12, V3_13, V4_0, V4_1, V4_2, V4_3} }

// ParseVersion reads "4.3", or a release such as "3.10.8" or "4.0.9",
// whose series it names. A series without a profile is an error that
// lists the ones there are; 3.11 behaves as 3.10 for every rule amqpsim
// models but the vhost default queue type, which amqpsim does not model.
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) >= 2 && len(parts) <= 3 {
		var nums [3]uint64
		ok := true
		for i, p := range parts {
			n, err := strconv.ParseUint(p, 10, 8)
			if err != nil {
				ok = false
				break
			}
			nums[i] = n
		}
		v := Version{uint8(nums[0]), uint8(nums[1])}
		for _, known := range Versions() {
			if ok && v == known {
				return v, nil
			}
		}
	}
	names := make([]string, 0, 7)
	for _, v := range Versions() {
		names = append(names, v.String())
	}
	return Version{}, fmt.Errorf("sim: no profile for RabbitMQ %q (profiles: %s)", s, strings.Join(names, ", "))
}

// String returns "4.3".
func (v Version) String() string {
	if v == (Version{}) {
		v = DefaultVersion
	}
	return fmt.Sprintf("%d.%d", v.major, v.minor)
}

// Set parses a flag value (flag.Value).
func (v *Version) Set(s string) error {
	p, err := ParseVersion(s)
	if err != nil {
		return err
	}
	*v = p
	return nil
}

// atLeast reports whether v is the series major.minor or later; only
// Profile below uses it, so that the rest of the code asks the profile.
func (v Version) atLeast(major, minor uint8) bool {
	return v.major > major || v.major == major && v.minor >= minor
}

// Profile is what a RabbitMQ release does differently, as data: the
// broker, its queues and the wire server ask it and never compare
// versions. Each field names the rabbitmq-server source it follows, "RS@vX
// module:function" at that release tag (deps/rabbit/src), or its release
// notes (release-notes/X.Y.Z.md).
type Profile struct {
	Version Version
	// ServerVersion is connection.start's "version" server property: the
	// release the profile's rules were read at.
	ServerVersion string

	// QueueConsumerTimeout enables the per-queue consumer timeout, the
	// x-consumer-timeout argument and the consumer-timeout policy key,
	// the smaller winning (3.12+; RS@v3.12.0
	// rabbit_channel:get_queue_consumer_timeout/2). The argument is not
	// validated: a non-integer means none.
	QueueConsumerTimeout bool

	// LastDeathHeaders adds x-last-death-reason, -queue and -exchange to
	// a dead-lettered message, updated at every death (3.13+; RS@v3.13.7
	// mc_amqpl:deaths_to_headers/2). The 3.13 profile follows 3.13.3+,
	// which fixed the x-death count of TTL expiry
	// (release-notes/3.13.3.md).
	LastDeathHeaders bool
	// DeadLetterKeepsCC keeps a dead letter's CC header when
	// x-dead-letter-routing-key replaces its routing keys (3.13+: RS@v3.13.7
	// rabbit_dead_letter:publish/5 sets the keys as an annotation; RS@v3.10.8
	// deletes the header). The CC keys route it only without a
	// dead-letter routing key, on every release (recorded:
	// dlx-routing-key-keeps-cc.txt on 3.10.8, 4.0.5 and 4.3.6).
	DeadLetterKeepsCC bool
	// StreamTakesDeadLetters: a stream takes an at-most-once dead letter
	// (a classic queue's, a quorum queue's without at-least-once); 3.10
	// drops it, as rabbit_stream_queue:deliver ignored a delivery without
	// a queue state until 3.12.0 (RS commit 4f15ecaed5, "Streams: make
	// at-most-once dead lettering to work"; dlx-to-stream.txt, recorded on
	// 3.10.8, 4.0.5 and 4.3.6).
	StreamTakesDeadLetters bool
	// IgnorePublisherDeaths drops an x-death header a publisher set
	// instead of extending it (4.0+; release-notes/4.0.1.md "AMQP 0.9.1
	// x-death header", RS@v4.0.9 mc_amqpl:init/1 keeps x-death as an
	// internal header).
	IgnorePublisherDeaths bool

	// MaxMessageSize is max_message_size's default: 128 MiB, 16 MiB from
	// 4.0 (release-notes/4.0.1.md; RS@v4.0.9 deps/rabbit/Makefile).
	// Channel.Publish refuses a larger body with 406 (RS@v4.0.9
	// rabbit_channel:check_msg_size/2; see Broker.MaxMessageSize).
	MaxMessageSize uint64
	// FrameMinSize is RabbitMQ's FRAME_MIN_SIZE: 4096, 8192 from 4.1
	// (release-notes/4.1.0.md; RS@v4.1.8 rabbit_framing.hrl). It is the
	// largest frame accepted before connection.tune-ok
	// (rabbit_reader:start_connection/5, initial_frame_max) and the least
	// frame_max a tune-ok may ask for (rabbit_reader:handle_method0/2's
	// validate_negotiated_integer_value): 4.3.6 drops a connection whose
	// tune-ok asks for 4096 or 8191 without a word 3 s later, where 3.10.8
	// and 4.0.5 open it (measured with a raw socket, twice each;
	// TestTuneOkFrameMaxMinimum).
	FrameMinSize uint32
	// StrictContentSize closes the connection with 501 FRAME_ERROR for a
	// content header announcing a body over 512 MiB ("content body size N
	// exceeds maximum allowed size 536870912") and for a body frame
	// longer than what the header left to come ("content body frame
	// exceeds remaining content size"), from 4.3 (RS@v4.3.0
	// rabbit_command_assembler:process/2; also 4.2.6 and later, past the
	// 4.2 profile's 4.2.0). Before, such a header waits for its body and
	// such a frame leaves the content unfinished, so that the next method
	// frame closes the connection with 505 "expected content body, got non
	// content body frame instead" (measured on 3.10.8, 4.0.5 and 4.3.6 with
	// a raw socket, twice each; TestContentLongerThanDeclared).
	StrictContentSize bool

	// ConsumerMaxPerChannel is the consumer_max_per_channel setting
	// (Config.ConsumerMaxPerChannel), 4.0+: basic.consume on a channel
	// that has that many consumers closes the connection with 530
	// (RS@v4.0.9 rabbit_channel:handle_method(#'basic.consume'{}), the
	// #conf{max_consumers} it reads at channel start; the stored source
	// read is a 4.x rabbit_channel, the tag not confirmed).
	ConsumerMaxPerChannel bool

	// ReplyToMandatoryRouted counts a publish to a direct reply-to name
	// as routed, so a mandatory one is not returned (4.2+;
	// release-notes/4.2.0.md, direct reply-to as a volatile queue).
	ReplyToMandatoryRouted bool
	// TransientNonExclusiveDenied refuses queue.declare of a classic
	// queue that is neither durable nor exclusive with 541, closing the
	// connection (RS@v4.3.5 rabbit_amqqueue:declare/7,
	// is_queue_args_combination_permitted/2, and
	// rabbit_deprecated_features:get_warning/2 for the text). No
	// release's profile sets it: 4.3.6 lists transient_nonexcl_queues as
	// permitted_by_default (measured); a Config.Profile may.
	TransientNonExclusiveDenied bool
	// GlobalQosDenied takes basic.qos global=true as global=false (4.3+:
	// global_qos denied by default; RS@v4.3.5 rabbit_channel:
	// handle_method(#'basic.qos'{global = true}), is_global_qos_permitted/0).
	GlobalQosDenied bool

	// What connection.start says besides the version, measured with a
	// raw socket on 3.10.8, 4.0.5 and 4.3.6 (3.12 and 3.13 say what
	// 3.10.8 says, 4.1 and 4.2 what 4.0.5 says: not measured): the
	// platform property (the Erlang/OTP release the broker runs on), the
	// copyright property, and the mechanisms field in the release's order
	// (rabbit_reader:auth_mechanisms/1, rabbit_registry's order). 4.0.5
	// and 4.3.6 offer ANONYMOUS and list it in different places; it logs
	// in as anonymous_login_user, guest (AnonymousUser; measured on
	// 4.0.5; rabbit_auth_mechanism_anonymous, read in a 4.x source, the
	// tag not confirmed).
	Platform, Copyright, Mechanisms string
	// Protocol headers (measured on 3.10.8, 4.0.5 and 4.3.6 with a raw
	// socket; ProtocolHeader reads these). AMQP08 starts AMQP 0-8 on
	// "AMQP\x01\x01\x08\x00" and "AMQP\x01\x01\x09\x01" (3.10; 4.0.5
	// and 4.3.6 refuse them). AMQP10 starts AMQP 1.0 on its SASL header
	// "AMQP\x03\x01\x00\x00" (4.0+: AMQP 1.0 is a core protocol,
	// release-notes/4.0.1.md; 3.10.8 has no plugin for it). RefusalHeader
	// is what a header that starts nothing is answered with before the
	// socket closes, unless it claims 0-9-x ("AMQP\x00\x00\x09" and any
	// revision), which every release answers with the 0-9-1 header:
	// 3.10.8 the 0-9-1 header, 4.0.5 and 4.3.6 AMQP 1.0's SASL header.
	AMQP08, AMQP10 bool
	RefusalHeader  [8]byte
	// AccessRefusalNamesPermission starts a refused permission's text
	// with the permission: "configure access to queue 'q' in vhost '/'
	// refused for user 'u'", and "write access to topic ..." (4.0+;
	// recorded: permissions-methods.txt, permissions-channel-cache.txt,
	// users-login.txt and, for topic permissions,
	// users-topic-permissions.txt on 4.0.5 and 4.3.6;
	// rabbit_access_control:check_resource_access/4 formats
	// "~ts access to ~ts refused for user '~ts'"). 3.10.8 omits it.
	AccessRefusalNamesPermission bool
	// PassiveDeclareNeedsPermission makes a passive queue.declare or
	// exchange.declare need some permission (configure, write or read) on
	// the name, checked before the queue or exchange is looked up, the
	// refusal naming configure (4.3+: recorded in permissions-methods.txt
	// and measured on 4.3.6; 4.2.6 and 4.3.0 required configure,
	// rabbitmq-server#16085, 4.3.1 took any, #16272,
	// release-notes/4.3.1.md). 3.10.8 and 4.0.5 check nothing.
	PassiveDeclareNeedsPermission bool
	// UnknownExchangeTypeChannelError makes exchange.declare of an
	// unknown type 406 PRECONDITION_FAILED, closing the channel, where
	// 3.10 closes the connection with 503 COMMAND_INVALID (3.13+:
	// rabbitmq-server#11214 in 3.13.3, rabbit_exchange:check_type/1;
	// recorded: exchange-unknown-type-closes-connection.txt on 4.0.5 and
	// 4.3.6).
	UnknownExchangeTypeChannelError bool
	// PublishChecksMessageFirst makes basic.publish check the reply-to,
	// the expiration and the CC and BCC headers (making the message)
	// before the topic permission and the user-id, where up to 3.13 the
	// topic permission comes first and the user-id before the expiration
	// (RS@v4.0.5 and v4.3.5 rabbit_channel handle_method basic.publish,
	// RS@v3.13.7 the other order; recorded on 3.10.8, 4.0.5 and 4.3.6:
	// publish-check-order.txt, fuzz seed 18443). The topic permission
	// then covers the CC and BCC keys too (users-topic-permissions-cc.txt).
	PublishChecksMessageFirst bool
	// TxCommitMissingQueue is what tx.commit does with a staged publish
	// whose queue was deleted since. Up to 3.12 the transaction keeps the
	// queue names routing found and the commit looks them up again: it
	// skips a deleted queue, and reaches one declared since under a name
	// the default exchange routed to. From 3.13 it holds the queue
	// records (RS@v3.13.7 rabbit_channel basic.publish: lookup_many
	// before staging), and delivering to a gone one is a rejection (406
	// "partial tx completion" after every publish went out), from 4.3,
	// unless a queue was declared again under its name, a 506
	// RESOURCE_ERROR closing the connection, the publishes staged after
	// it never delivered (recorded on 3.10.8, 4.0.5 and 4.3.6:
	// tx-commit-deleted-queue.txt and tx-commit-queue-declared.txt, fuzz
	// seeds 20083 and 20221).
	TxCommitMissingQueue TxMissingQueue

	// HTTPMaxBody is the largest request body the management HTTP API
	// reads; a larger one is refused with 400 "Exceeded HTTP request body
	// size limit" (500 with no body where a declare reads it:
	// rabbit_mgmt_util:with_vhost_and_props matches only {ok, ...}).
	// 3.10.8 compares the body's bit_size with max_http_body_size,
	// 10,000,000, after each read of at most cowboy's 8,000,000 bytes, so
	// that a body that needs a second read is refused (measured: 8,000,001
	// bytes taken, 8,100,000 refused; rabbitmq-server#9708 discusses the
	// bit_size); 4.0.5 and 4.3.6 compare byte sizes with 20,000,000
	// (?MANAGEMENT_DEFAULT_HTTP_MAX_BODY_SIZE; read in their beams: 4.3.6
	// after each read, 4.0.5 before it, so it may take up to 8 MB more).
	// 3.12 and 3.13 are assumed to be 3.10's (not read).
	HTTPMaxBody int64
	// TopicMaxHashWords is the most "#" words a topic binding key may
	// hold (4.3: 2; RS@v4.3.5 rabbit_exchange_type_topic:validate_binding/2,
	// MAX_HASH_WILDCARDS): a binding with more is refused, over AMQP with
	// 406 "Topic binding key 'K' uses N '#' wildcards, at most 2 are
	// allowed", and in a definitions import. 0 is no limit: 3.10.8 and
	// 4.0.5 take any number (recorded: topic-hash-wildcard-limit.txt), and
	// 4.2 had none (RS@v4.2.9).
	TopicMaxHashWords int
	// TopicPermissionsNeedExchange makes SetTopicPermissions refuse an
	// exchange that does not exist, as rabbitmqctl set_topic_permissions
	// does from 4.3 ("Exchange X does not exist", exit status 69;
	// RS@v4.3.5 rabbit_auth_backend_internal:set_topic_permissions/6
	// throws no_such_exchange, RS@v4.2.0 does not check). 3.10.8 and
	// 4.0.5 set them (measured with rabbitmqctl on the three; found by
	// amqpsim fuzz, seed 5038).
	TopicPermissionsNeedExchange bool

	// ConsumersNeedVhost makes GET /api/consumers/VHOST need a vhost the
	// user sees (an administrator, a monitoring user or one with
	// permissions there), answering others 404 {"error":"not_found",
	// "reason":"Not Found"} (4.3: rabbit_mgmt_wm_consumers:is_authorized
	// calls is_authorized_vhost_visible_for_monitoring, whose
	// user_matches_vhost_visible answers not_found; read in 4.3.6's beams
	// and measured twice on 4.3.6 with the management plugin: a monitoring
	// user without permissions gets 200). 3.10.8 (recorded) and 4.0.5
	// (read) ask only for a management tag.
	ConsumersNeedVhost bool

	// Queue holds the rules the queues follow (queue.Rules), each queue
	// type's own included (its texts, what it refuses, which of its
	// deliveries time out); the fields' comments there give the evidence
	// of those measured on 4.0.5 and 4.3.6:
	//   - GetCountOnlyReturned (3.12+): RS@v3.12.0
	//     rabbit_fifo_client:add_delivery_count_header/2; 3.10's
	//     dequeue/3 adds the header to every get.
	//   - DefaultDeliveryLimit 20 (4.0+): RS@v4.0.9 rabbit_quorum_queue
	//     ?DEFAULT_DELIVERY_LIMIT and resolve_delivery_limit/2; returns go
	//     to the head while a limit is set (rabbit_fifo:return/8).
	//   - QuorumPriorities: two levels in 4.0–4.2 (RS@v4.0.9 rabbit_fifo_q,
	//     rabbit_fifo:priority_tag/1), strict 0..31 in 4.3 (RS@v4.3.5
	//     rabbit_fifo_pq, rabbit_fifo:msg_priority/1).
	//   - QuorumSACPriority (4.0+): RS@v4.0.9 rabbit_fifo:
	//     activate_next_consumer/2, update_or_remove_con/4 (quiescing),
	//     sort_waiting/1, checkout_one/4 (no delivery to a consumer that
	//     is not up); release-notes/4.0.1.md. Read in a rabbit_fifo of
	//     machine version 7 (the v4.0.9 file is not in the index), where
	//     a return hands over too; a 4.0.x broker may do so only at its
	//     next settle or consume.
	//   - SplitDeliveryCount (4.3+): RS@v4.3.5 rabbit_channel:
	//     handle_method(#'basic.reject'|#'basic.nack') and
	//     rabbit_fifo:return_one/...; release-notes/4.3.0.md.
	//   - QuorumCountsProperties (4.3+): RS@v4.3.5 rabbit_fifo:
	//     maybe_enqueue/8 (Size = MetaSize + BodySize); RS@v4.2.9 and
	//     RS@v4.1.8 count BodySize alone
	//     (scenarios/testdata/profiles/quorum-counts-properties.txt).
	//     Recorded on 3.10.8, 4.0.5 and 4.3.6
	//     (quorum-max-length-bytes-properties.txt).
	//   - OnlyQueueVersion2 (4.3+): RS@v4.3.5
	//     rabbit_amqqueue:check_queue_version/2; the refusal's text is
	//     assumed to be 3.10's (not read).
	//   - ConsumerTimeoutQuorumOnly (4.3+): RS@v4.3.5
	//     rabbit_classic_queue:capabilities/0; release-notes/4.3.0.md.
	//   - QuorumConsumerTimeout (4.3+): read in 4.3.6's own modules
	//     (rabbit_fifo evaluate_consumer_timeout, rabbit_queue_type:
	//     consume/3, rabbit_channel:handle_queue_actions/2) and measured
	//     on 4.3.6 (scenarios/library/quorum-consumer-timeout*.txt).
	//   - SACGetNamesQueueType (4.2+): rabbit_channel:
	//     unsupported_single_active_consumer_error/1 in a 4.x source;
	//     recorded on 4.3.6.
	//   - QueueModeUnchecked (4.3+): recorded in
	//     declare-invalid-arguments.txt and measured on 4.3.6 (any value
	//     of any type declares; a redeclare still compares it; quorum
	//     queues and streams still refuse it). release-notes/4.3.0.md,
	//     "CQv1 storage is removed", says x-queue-mode is refused at any
	//     value; 4.3.6 does not refuse it.
	//   - ImplicitQueueType, ReturnsByConsumerKey (4.0+) and
	//     ClassicDeliveryCount (4.3+): measured on 4.0.5 and 4.3.6; their
	//     rows in Changes name the recordings.
	//   - StreamQueueTexts, StreamAnySettlement, NoHAFailoverArg,
	//     StreamFormat, StreamReadBeforeRetention (4.0+),
	//     MaxAgeNoCrash, MaxAgeComparedInMs and StreamReadAheadCrash
	//     (4.3+): measured on 4.0.5 and 4.3.6; their rows in Changes name
	//     the recordings.
	Queue queue.Rules
}

// transientNonExclusiveText is the deprecation message of
// transient_nonexcl_queues when denied (RS@v4.3.5
// rabbit_deprecated_features:get_warning/2, phase denied_by_default);
// the reply text cuts it at 255 bytes.
const transientNonExclusiveText = "Feature `transient_nonexcl_queues` is deprecated.\n" +
	"By default, this feature is not permitted anymore.\n" +
	"The feature will be removed from a future major RabbitMQ version, regardless of the configuration; actual version to be determined.\n" +
	"To continue using this feature when it is not permitted by default, set the following parameter in your configuration:\n" +
	"    \"deprecated_features.permit.transient_nonexcl_queues = true\""

// serverVersions are the releases connection.start reports: the newest
// patch release of each line the docs were read at.
var serverVersions = map[Version]string{V3_10: "3.10.8", V3_12: "3.12.0", V3_13: "3.13.7",
	V4_0: "4.0.5", V4_1: "4.1.8", V4_2: "4.2.0", V4_3: "4.3.6"}

// Profile returns the rules of the release series v: 3.10's, with the
// changes made by v (Changes) applied, oldest first.
func (v Version) Profile() Profile {
	if v == (Version{}) {
		v = DefaultVersion
	}
	p := Profile{
		Version:        v,
		ServerVersion:  serverVersions[v],
		MaxMessageSize: 134217728,
		FrameMinSize:   4096,
		HTTPMaxBody:    8000000,
		Mechanisms:     "PLAIN AMQPLAIN",
		AMQP08:         true,
		RefusalHeader:  amqp091Header,
	}
	p.Platform, p.Copyright = platform(v)
	for _, c := range changes {
		if v.atLeast(c.Since.major, c.Since.minor) {
			c.apply(&p, v)
		}
	}
	return p
}

// platform is what connection.start says release series v runs on and
// who holds its copyright: what it says it is, not a rule (measured with
// a raw socket on 3.10.8, 4.0.5 and 4.3.6; see Profile.Platform).
func platform(v Version) (platform, copyright string) {
	switch {
	case v.atLeast(4, 3):
		return "Erlang/OTP 29.1.2", "Copyright (c) 2007-2026 Broadcom Inc and/or its subsidiaries"
	case v.atLeast(4, 0):
		return "Erlang/OTP 27.3.4.1", "Copyright (c) 2007-2024 Broadcom Inc and/or its subsidiaries"
	}
	return "Erlang/OTP 25.2.3", "Copyright (c) 2007-2022 VMware, Inc. or its affiliates."
}

// DeprecatedFeatures are the deprecated features Config.Permit can
// permit again.
var DeprecatedFeatures = []string{"global_qos", "transient_nonexcl_queues"}

// CheckPermit reports the first name that is not one of
// DeprecatedFeatures.
func CheckPermit(names []string) error {
	for _, n := range names {
		if !slices.Contains(DeprecatedFeatures, n) {
			return fmt.Errorf("sim: %q is not a deprecated feature amqpsim models (%s)", n, strings.Join(DeprecatedFeatures, ", "))
		}
	}
	return nil
}

// permit lifts the denials of the named deprecated features
// (rabbit_deprecated_features:is_permitted/1 reads
// deprecated_features.permit.NAME).
func (p Profile) permit(names []string) Profile {
	for _, n := range names {
		switch n {
		case "global_qos":
			p.GlobalQosDenied = false
		case "transient_nonexcl_queues":
			p.TransientNonExclusiveDenied = false
		}
	}
	return p
}

// Profile returns the rules of the release the broker simulates, with
// Config.Permit applied.
func (b *Broker) Profile() Profile { return b.profile }

// TxMissingQueue is what tx.commit does with a publish whose queue is gone
// (Profile.TxCommitMissingQueue).
type TxMissingQueue int

const (
	// TxSkipsMissingQueue delivers to the queues that are left.
	TxSkipsMissingQueue TxMissingQueue = iota
	// TxRejectsMissingQueue counts the publish as rejected: the commit
	// ends with 406 "partial tx completion".
	TxRejectsMissingQueue
	// TxFailsOnMissingQueue closes the connection with 506
	// RESOURCE_ERROR at that publish.
	TxFailsOnMissingQueue
)
