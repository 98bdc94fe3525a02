// Package scenarios records a client's conversation with real RabbitMQ as a
// plain-text file, replays it on the simulator (in process, and through
// amqp091-go over the in-memory wire), and draws it.
//
// A scenario is a list of steps (AMQP operations by named connections and
// channels), each followed by the results a broker gave: what consumers were
// pushed, what basic.get and the declare/purge/delete methods answered,
// publisher confirms and returns, broker cancels, and the errors that closed
// a channel or a connection. The results are recorded from a real broker
// (Record, or "amqpsim record"), and replayed on the simulator (Replay,
// ReplayWire, Run, or "amqpsim replay"), which must give the same lines. The package's
// library (Library) holds scenarios recorded on RabbitMQ 3.10.8, 4.0.5 and
// 4.3.6, each file holding the three releases' answers, that pin down the
// behaviour the simulator implements on each release's profile.
//
// # A scenario
//
//	# Seed 000's diagram: two consumers, each with a prefetch window of two.
//	source rabbitmq 3.10.8 2026-11-30
//
//	conn c1
//	channel c1.ch1
//	channel c1.ch2
//	declare-queue ch1 orders
//	  declare-ok ready=0 consumers=0
//	qos ch1 2
//	qos ch2 2
//	consume ch1 orders tag=A
//	consume ch2 orders tag=B
//	publish ch1 orders m1 m2 m3 m4 m5 m6
//	  A <- m1 #1
//	  A <- m3 #2
//	  B <- m2 #1
//	  B <- m4 #2
//	ack ch1 m1
//	  A <- m5 #3
//	close ch2
//	queue orders
//	  orders ready=3 unacked=2 consumers=1
//	ack ch1 #0 multiple
//	  A <- m2 #4 redelivered
//	  A <- m4 #5 redelivered
//
// # Grammar
//
// A file is read line by line:
//
//   - A line whose first non-blank character is '#' is a comment. Blank
//     lines separate groups of steps.
//   - "source rabbitmq VERSION DATE" or "source hand-written" says where the
//     expectations came from; Record writes it. A file recorded on several
//     releases has one source rabbitmq line per release series (3.10.8,
//     4.0.5, 4.3.6), and each is replayed on its own release's profile.
//     "source hand-written 4.2" is a release's answers written by hand
//     (from the rabbitmq-server source, for a release no broker here
//     runs); a file may hold several, one line each, beside recordings or
//     not, and each replays on its release's profile.
//     "seed N" seeds the simulator (sim.Config.Seed). "rabbitmq 4.3" names
//     the release whose profile replays a file with one source (or none)
//     (sim.Config.Version); without it, the release of the source line,
//     else sim.DefaultVersion. "cluster 3 NAME NAME NAME" says the
//     scenario runs on a cluster of that many nodes, with those names
//     (sim.Config.Nodes, NodeNames; see "Clusters" below). "config
//     consumer_timeout=3000 channel_tick_interval=1000" gives the broker
//     settings the answers were measured with (Settings: consumer_timeout,
//     channel_tick_interval, consumer_max_per_channel, RabbitMQ's names and
//     units), which the simulator takes from its Config; Record refuses
//     such a file, since a broker's settings are shared by every
//     recording on it. All come before the first step.
//   - Any other line that starts in column 1 is a step.
//   - An indented line is a result line of the step above it (no blank line
//     in between). Record rewrites these lines and nothing else; a comment
//     among them is kept but moves below them. In a file recorded on
//     several releases, a result line that not every release gave starts
//     with the releases that gave it, in brackets: "[4.0 4.3] ch1 <-
//     channel.close ...". A release's results are the lines without
//     brackets and those naming it, in order; where the releases agree the
//     file says so once, and where they differ the upgrade is read off the
//     recording. Record, on a broker of one release, rewrites that
//     release's lines and keeps the others'.
//
// A step is a verb and words separated by blanks. A word is bare, or a Go
// double-quoted string (for bodies and names with blanks or special
// characters: "", "a b"). key=value words are options; other bare words
// that a verb knows are flags. Names of connections and channels are letters,
// digits, '_' and '-', unique in the file; every step names a channel opened
// by an earlier step.
//
//	conn C [user=U password=P] [node=N]           open a connection (as guest by default; on a cluster, to node N)
//	channel C.CH                                  open a channel on C
//	close CH|C                                    channel.close or connection.close
//	declare-queue CH Q [passive] [durable] [exclusive] [auto-delete] [nowait] [ARGS]
//	declare-exchange CH X KIND [passive] [durable] [auto-delete] [internal] [ARGS]
//	delete-queue CH Q [if-unused] [if-empty]
//	delete-exchange CH X [if-unused]
//	bind CH Q X [key=K] [ARGS]                    queue.bind
//	unbind CH Q X [key=K] [ARGS]                  queue.unbind
//	purge CH Q
//	qos CH COUNT [global] [size=BYTES]
//	consume CH Q tag=TAG [no-ack] [exclusive] [ARGS]
//	cancel CH TAG
//	publish CH KEY BODY... [exchange=X] [mandatory] [immediate] [PROPS]
//	confirm CH                                    confirm.select
//	tx CH | commit CH | rollback CH               tx.select, tx.commit, tx.rollback
//	bind-exchange CH DST SRC [key=K] [ARGS]       exchange.bind (SRC routes on to DST)
//	unbind-exchange CH DST SRC [key=K] [ARGS]     exchange.unbind
//	policy NAME ^PATTERN [apply-to=W] [priority=N] arg.KEY=V...
//	                                              a policy of vhost "/" (rabbitmqctl set_policy on a broker)
//	clear-policy NAME
//	alarm memory|disk                             raise a resource alarm (rabbitmqctl on a broker)
//	alarm clear [memory|disk]                     clear one, or both
//	operator-policy NAME ^PATTERN [apply-to=W] [priority=N] arg.KEY=V...
//	                                              an operator policy of "/" (set_operator_policy)
//	clear-operator-policy NAME
//	user NAME PASSWORD [tags=T,T]                 add a user (rabbitmqctl add_user, set_user_tags)
//	delete-user NAME
//	permissions USER CONFIGURE WRITE READ         a user's permissions in "/" (set_permissions)
//	clear-permissions USER
//	user-tags USER [TAG...]                       replace a user's tags (set_user_tags)
//	topic-permissions USER EXCHANGE WRITE READ    a user's topic permissions on an exchange of "/" (set_topic_permissions)
//	get CH Q [no-ack]
//	ack CH MSG|#TAG [multiple]
//	nack CH MSG|#TAG [multiple] [requeue|requeue=false]
//	reject CH MSG|#TAG [requeue|requeue=false]
//	recover CH [requeue=false]
//	flow CH on|off                                channel.flow
//	advance DURATION                              e.g. 500ms, 31m
//	queue Q                                       observe a queue's counts
//	held                                          what every consumer holds
//	headers CH MSG                                a delivered message's headers
//	envelope CH MSG                               its exchange and routing key
//	stop-node N | kill-node N | start-node N      on a cluster: stop node N, crash it, start it again
//	pause-node N | resume-node N                  on a cluster: hang node N (SIGSTOP), let it run again
//	partition N                                   cut node N off from the other nodes
//	heal                                          end the partition
//	leader Q                                      on a cluster: where a queue's leader and members are
//	fault close-connection C                      a test's fault: 320 CONNECTION_FORCED (rabbitmqctl close_connection on a broker)
//	fault close-channel CH | fault consumer-timeout CH | fault nack-publishes N | fault restart
//	                                              faults only the simulator takes (a failure report's; op_fault.go)
//
// An alarm blocks a connection as it publishes, and the broker reads
// nothing more from it until the last alarm clears: on a blocked
// connection use only steps that wait for no reply (publish, ack, nack,
// reject) until the "alarm clear" step, whose results show what the held
// frames did. Against a broker the recorder raises alarms with rabbitmqctl
// (set_vm_memory_high_watermark 0.0000001, set_disk_free_limit 1000000GB)
// and restores the values it read before the first, also when a run
// fails.
//
// On a broker, user names get the run's prefix (guest excepted), and so do
// permission expressions and policy patterns after a leading ^ (unless
// ^amq\. follows), but not topic permissions' expressions, which match
// routing keys; results show them without it. A connection the broker
// refuses shows "C <- login refused" (a bad user or password: amqp091-go
// does not show RabbitMQ's text) or its connection.close, and stays
// closed.
//
// Messages are named by their bodies, so keep bodies unique. "ack ch1 m3"
// settles the channel's latest delivery of m3; "#N" names a delivery tag
// ("ack ch1 #0 multiple" acks everything). "headers ch1 m3" shows the
// headers of the channel's latest delivery of m3, as a consumer or basic.get
// received it (x-death after dead-lettering); "envelope ch1 m3" shows that
// delivery's exchange and routing key, which dead-lettering rewrites. A
// nowait declare asks for no declare-ok, so its step shows nothing unless
// the channel closes. The empty queue name "" means the
// channel's last declared queue, as in AMQP. nack and reject requeue unless
// told requeue=false. Consumer tags are always explicit.
//
// ARGS are queue, exchange, binding or consumer arguments: x-NAME=VALUE, or
// arg.NAME=VALUE for a name without the x- prefix. PROPS are message
// properties: persistent, delivery-mode=N, priority=N, content-type=,
// content-encoding=, correlation-id=, reply-to=, expiration=, message-id=,
// type=, user-id=, app-id=, and headers header.NAME=VALUE. A VALUE is typed:
// 5 is a signedint, true and false are bools, 1.5 is a double, void is
// void, "text" or any other bare word is a longstr; TYPE(V) gives any other
// type: byte, ubyte, short, ushort, int, uint, long, float, double,
// decimal (as many digits after the point as its scale: decimal(1.50)),
// str, binary (a quoted Go string: binary("\x00\x01")), bool, timestamp
// (seconds since the Unix epoch), e.g. x-priority=long(5),
// x-stream-offset=timestamp(1700000000). A table is {KEY=VALUE ...} (a key
// that is not a bare word quoted) and an array [VALUE ...], nested at will:
// a header a result shows is written the same way in a step, so a message
// can be published again with the x-death it arrived with (a timestamp
// written as seconds instead of *):
//
//	publish ch1 work m1 header.x-death=[{count=long(1) exchange="" queue=work reason=rejected routing-keys=[work] time=timestamp(1700000000)}]
//
// Against a broker, the queue and exchange names of x-death entries and of
// the x-first-death-* and x-last-death-* headers get the run's prefix, as
// queue arguments' names do.
//
// Parse errors name the file, line and column and what was expected:
//
//	q.txt:7:15: unknown option "prefetch" for consume (usage: consume CHANNEL QUEUE tag=TAG [no-ack] [exclusive] [x-ARG=V...])
//
// # Results
//
// Each step's result lines come in a fixed order that does not depend on how
// the broker interleaved frames for different channels:
//
//  1. The method's own answer: "declare-ok ready=N consumers=N",
//     "get-ok m1 #3 left=2" (with "redelivered" when set), "get-empty",
//     "purge-ok N", "delete-ok N"; for queue, "Q ready=N unacked=N
//     consumers=N", "Q not found" or "Q locked"; for held, one line per
//     consumer ("A: m1 #1, m3 #2", "A (cancelled): ...", "CH get: ...");
//     for headers, one "NAME=VALUE" line per header in name order (or "no
//     headers"); for envelope, "exchange=X key=K"; and "! CH is closed" when the client refused to send on a
//     closed channel or connection.
//  2. Deliveries, by consumer in creation order: "A <- m1 #1",
//     "A <- m2 #4 redelivered". A consumer is named by its tag, or CH.TAG when
//     the file uses its tag on several channels.
//  3. Per channel, in opening order: "CH <- basic.return BODY 312 NO_ROUTE
//     exchange=X key=K", "CH <- confirm ack 1-3,5" and "CH <- confirm nack 4",
//     "CH <- basic.cancel TAG", and "CH <- channel.close CODE (METHOD): TEXT".
//  4. Per connection: "C <- connection.blocked REASON" and "C <-
//     connection.unblocked" (resource alarms), then "C <-
//     connection.close CODE (METHOD): TEXT".
//
// A channel.close is a soft error (the channel's scope); a connection.close
// is a hard one (the connection's). A newline in a reply text is written \n. METHOD is the method that failed, such as
// basic.ack, or none.
//
// queue observes from a connection of the driver's own by a passive declare,
// so it shows what queue.declare-ok shows (ready messages and consumers);
// unacked is the number of deliveries from the queue the scenario's clients
// hold unsettled, which RabbitMQ shows only through its management API,
// less those the queue no longer counts: of a queue deleted since, or of
// a classic queue whose node stopped or crashed, or was cut off from the
// holding channel's (the queue took them back). On
// the simulator (either driver) a line "! the simulator counts unacked=N"
// follows when its own count differs: the deliveries from the queue its
// channels hold, unacked ones and those a 4.3 quorum queue timed out and
// took back (sim.QueueStats Unacked plus TimedOut).
//
// Header values are written as in steps, with tables as {K=V ...} and arrays
// as [V ...]; timestamps, such as x-death's time from the broker's own
// clock, are normalised to timestamp(*):
//
//	x-death=[{count=long(1) exchange="" queue=work reason=expired routing-keys=[work] time=timestamp(*)}]
//
// Publisher confirms are normalised to the set of publish tags confirmed by
// each step: RabbitMQ may coalesce confirms into one multiple=true basic.ack
// (amqp091-go then delivers them one by one), so the frames' shape is not
// stable, but the set is. Generated names are normalised to "amq.gen-*" and
// "amq.ctag-*".
//
// # Drivers
//
// Every scenario runs through three drivers, which must give the same
// lines:
//
//   - Replay runs the steps on a fresh sim.Broker in process and reads
//     every push from the connections' outboxes after each step, so the
//     results are exact and deterministic.
//   - ReplayWire runs them through amqp091-go, the client real code uses,
//     against a fresh simulator over the in-memory wire (package wire), so
//     the wire server and codec are covered by the whole library. It runs
//     inside a testing/synctest bubble: after each step synctest.Wait
//     returns once the server has handled every frame and the client has
//     read every frame pushed to it, an exact barrier. advance moves the
//     broker's virtual clock.
//   - Record runs them through amqp091-go against any broker URL. A real
//     broker offers no such barrier, so after each step that can make it
//     push frames the driver waits until no frame has arrived for a quiet
//     window (DefaultWindow, 150 ms; RecordOptions.Window) before reading
//     the results; this is the only wait on the wall clock, and only
//     against a real broker.
//
// Frames are read off the wire by a tap on the client's connection, not
// from amqp091-go's notification channels: that keeps their order and the
// failing method of a close, which amqp091-go drops. Against a broker,
// queue and exchange names get a random per-run prefix (so runs never
// collide), removed from everything observed (headers included), and
// everything a run declared is deleted afterwards. The names queue
// arguments refer to get it too: x-dead-letter-exchange, and
// x-dead-letter-routing-key when that exchange is the default one ""
// (whose keys are queue names). advance sleeps for real against a broker.
// Every step that waits for a quiet window also lets about 150 ms pass that
// the simulator does not see, so timed scenarios keep a few hundred
// milliseconds between an expiry and the step that observes it.
//
// amqp091-go always announces the consumer_cancel_notify capability, so
// scenarios see basic.cancel when a queue is deleted; it never lets the
// broker choose a consumer tag, so scenarios name every tag.
//
// # Clusters
//
// A scenario with a cluster directive runs on a cluster: "conn c2
// node=2" attaches a connection to a node; stop-node, kill-node and
// start-node stop, crash and start one; partition cuts one off and heal
// ends the cut; leader shows a queue's leader and members. A connection
// whose node stops shows its connection.close 320; one whose node crashed,
// "c2 <- connection reset" (its socket reset; "connection dropped" for
// one closed without a reset); one whose node hung, "c2 <- connection
// timed out" once the client's heartbeat deadline passes (the simulator's
// driver stands for amqp091-go: 15 s after the hang); a conn to a node
// that is down, "c2 <- connection refused". A method RabbitMQ answers only later
// (sim.ErrQueued) shows nothing under its step: its close, or "ch1 <-
// late answer to ..." when it succeeds, shows under the step during which
// it arrives, so that "advance 60s" with no result and "advance 40s" with
// the close record that it came after 60 s and within 100 s. The
// channel's later steps wait behind it, as on RabbitMQ. Record replays the steps on a real cluster through a
// control command (RecordOptions.Cluster, "amqpsim record --cluster
// CMD"), waiting after each fault step until the cluster has settled.
// The package's cluster directory (Cluster) holds scenarios recorded on a
// 3-node RabbitMQ 4.3.6 cluster. docs/scenarios.md says more.
//
// # Using scenarios in tests
//
//	func TestScenarios(t *testing.T) {
//		scenarios.Run(t, "testdata/scenarios") // a file or a directory; one subtest per file
//	}
//
// Run replays each file on the simulator in process (Check) and through
// amqp091-go over the in-memory wire in a synctest bubble (CheckWire), and
// reports a diff per diverging step, naming the file and line. To record the files against a broker:
//
//	go test -run TestScenarios -scenarios.record=amqp://guest:guest@127.0.0.1:5672/
//
// or "amqpsim record --url URL testdata/scenarios". "amqpsim replay
// --timeline FILE" prints what each consumer held and when, and "amqpsim
// replay --svg out.svg FILE" draws the scenario as a sequence diagram.
//
// # From a property-test counterexample to a regression test
//
// When the module's rapid model tests (TestModel and its siblings) fail,
// they write rapid's shrunk operation sequence as a scenario file, to
// $AMQPSIM_COUNTEREXAMPLES, to testdata/counterexamples/ when that is
// "testdata", or else to a new temporary directory, and print its path. Its
// header comment names the test and rapid's seed; its seed directive is the
// simulator's. Record RabbitMQ's answers into it, then replay it:
//
//	go run ./cmd/amqpsim record --url $AMQP_URL FILE
//	go run ./cmd/amqpsim replay FILE
//
// If the simulator disagrees with what RabbitMQ recorded, the simulator has
// a bug, and the file is the failing test for it: commit it under
// testdata/counterexamples/, which the root package's tests replay once
// recorded. Each operation becomes one step, except that broker.Publish,
// which has no channel, is a publish on a connection of its own; the file
// says so in a comment, and ends with held and queue steps that show the
// state the sequence left. Other generators of operations can write files
// the same way with New, SetSeed and Format, or WriteFile.
package scenarios
