package sim_test

import (
	"fmt"
	"maps"
	"runtime"
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// queueKind is a queue type the dispatch and settlement benchmarks run on,
// each as a sub-benchmark of its own.
type queueKind struct {
	name string
	opts sim.QueueOptions
}

var queueKinds = []queueKind{
	{"classic", sim.QueueOptions{}},
	{"quorum", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum"}}},
}

// with returns the kind's options with extra arguments added.
func (k queueKind) with(extra sim.Table) sim.QueueOptions {
	o := k.opts
	o.Args = maps.Clone(o.Args)
	if o.Args == nil {
		o.Args = sim.Table{}
	}
	maps.Copy(o.Args, extra)
	return o
}

// forEachKind runs body as a sub-benchmark per queue kind.
func forEachKind(b *testing.B, body func(b *testing.B, k queueKind)) {
	for _, k := range queueKinds {
		b.Run(k.name, func(b *testing.B) { body(b, k) })
	}
}

// lifecycle is a queue "work" with consumers on their own channels.
type lifecycle struct {
	b         *sim.Broker
	channels  []*sim.Channel
	consumers []*sim.Consumer
	msg       sim.Message
}

func newLifecycle(tb testing.TB, opts sim.QueueOptions, consumers, prefetch int) *lifecycle {
	l := &lifecycle{b: sim.New(sim.Config{NoTrace: true}), msg: sim.Message{Body: make([]byte, 128)}}
	conn := l.b.Connect("bench")
	for i := 0; i < consumers; i++ {
		ch, err := conn.Channel()
		if err != nil {
			tb.Fatal(err)
		}
		if i == 0 {
			if _, err := ch.QueueDeclare("work", opts); err != nil {
				tb.Fatal(err)
			}
		}
		if err := ch.Qos(prefetch, 0, false); err != nil {
			tb.Fatal(err)
		}
		c, err := ch.Consume("work", sim.ConsumeOptions{})
		if err != nil {
			tb.Fatal(err)
		}
		l.channels = append(l.channels, ch)
		l.consumers = append(l.consumers, c)
	}
	return l
}

// next reads the first unread delivery of any consumer, as a client reads
// one (Consumer.Next), and returns its channel and delivery tag, what the
// benchmarks settle it by. Only the tag leaves: a Delivery is large (320
// bytes), and returning it through here cost the loop two copies of its
// own, about 175 instructions a lifecycle (callgrind) that no client pays.
func (l *lifecycle) next(tb testing.TB) (*sim.Channel, uint64) {
	for i, c := range l.consumers {
		if d, ok := c.Next(); ok {
			return l.channels[i], d.DeliveryTag
		}
	}
	tb.Fatal("no delivery")
	return nil, 0
}

// BenchmarkLifecycle measures publish → deliver → ack of one message with 4
// consumers of prefetch 100 on one queue, per queue type.
func BenchmarkLifecycle(b *testing.B) {
	forEachKind(b, func(b *testing.B, k queueKind) {
		l := newLifecycle(b, k.opts, 4, 100)
		b.ReportAllocs()
		for b.Loop() {
			if err := l.b.Publish("/", "", "work", l.msg); err != nil {
				b.Fatal(err)
			}
			ch, tag := l.next(b)
			if err := ch.Ack(tag, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDeepQueue runs the lifecycle with a deep backlog: every step
// publishes at the tail, nacks a delivery with requeue, and acks a
// redelivery. The first consumer takes every step's deliveries: it holds
// one of them unread and unsettled throughout, so that a nacked message's
// redelivery, at the end of its window, comes up for the ack, and each
// message is returned once (with an even window it would come up for a
// nack again, and its delivery count would grow without end). On a
// classic queue the nacked message goes back to its
// original place at the head; on a quorum queue it is a return, served
// before the backlog, which in 3.10 takes a delivery limit (without one
// rabbit_fifo re-enqueues a nacked message at the tail). Cost per message
// must not grow with depth.
func BenchmarkDeepQueue(b *testing.B) {
	forEachKind(b, func(b *testing.B, k queueKind) {
		opts := k.opts
		if k.name == "quorum" {
			opts = k.with(sim.Table{"x-delivery-limit": int64(1 << 40)})
		}
		for _, depth := range []int{1e3, 1e4, 1e5, 1e6} {
			b.Run(fmt.Sprint(depth), func(b *testing.B) {
				l := newLifecycle(b, opts, 4, 100)
				for i := 0; i < depth+400; i++ {
					if err := l.b.Publish("/", "", "work", l.msg); err != nil {
						b.Fatal(err)
					}
				}
				l.consumers[0].Next() // held
				b.ReportAllocs()
				for b.Loop() {
					if err := l.b.Publish("/", "", "work", l.msg); err != nil {
						b.Fatal(err)
					}
					ch, tag := l.next(b)
					if err := ch.Nack(tag, false, true); err != nil {
						b.Fatal(err)
					}
					ch, tag = l.next(b)
					if err := ch.Ack(tag, false); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}

// BenchmarkManyConsumers measures a delivery and its ack when all consumers
// but one hold a full window, per queue type: blocked consumers must cost
// nothing.
func BenchmarkManyConsumers(b *testing.B) {
	forEachKind(b, func(b *testing.B, k queueKind) {
		for _, n := range []int{1, 10, 100, 1000} {
			b.Run(fmt.Sprint(n), func(b *testing.B) {
				bk := sim.New(sim.Config{NoTrace: true})
				conn := bk.Connect("bench")
				msg := sim.Message{Body: make([]byte, 128)}
				var active *sim.Consumer
				var activeCh *sim.Channel
				for i := 0; i < n; i++ {
					ch, _ := conn.Channel()
					if i == 0 {
						if _, err := ch.QueueDeclare("work", k.opts); err != nil {
							b.Fatal(err)
						}
					}
					ch.Qos(1, 0, false)
					c, err := ch.Consume("work", sim.ConsumeOptions{})
					if err != nil {
						b.Fatal(err)
					}
					bk.Publish("/", "", "work", msg) // fills this consumer's window of 1
					active, activeCh = c, ch
				}
				// The last consumer is the active one: it acks what it got and
				// takes the next message each time.
				d, _ := active.Next()
				b.ReportAllocs()
				for b.Loop() {
					if err := activeCh.Ack(d.DeliveryTag, false); err != nil {
						b.Fatal(err)
					}
					bk.Publish("/", "", "work", msg)
					var ok bool
					if d, ok = active.Next(); !ok {
						b.Fatal("the active consumer got nothing")
					}
				}
			})
		}
	})
}

// BenchmarkMemory reports the heap held per ready message beyond its body,
// and per unacked delivery, with 10^6 messages of 16-byte bodies.
func BenchmarkMemory(b *testing.B) {
	const n = 1_000_000
	const bodySize = 16
	for b.Loop() {
		bk := sim.New(sim.Config{NoTrace: true})
		ch, _ := bk.Connect("bench").Channel()
		ch.QueueDeclare("work", sim.QueueOptions{})
		msg := sim.Message{Body: make([]byte, bodySize)}
		before := heapInUse()
		for i := 0; i < n; i++ {
			bk.Publish("/", "", "work", msg)
		}
		ready := heapInUse()
		b.ReportMetric(float64(ready-before)/n-bodySize, "B/ready-msg")

		// A consumer on a connection whose pushes are drained and
		// dropped, so that only the broker's side of each delivery is
		// counted.
		shell, _ := bk.Dial(sim.ConnectOptions{})
		sch, _ := shell.Channel()
		sch.Consume("work", sim.ConsumeOptions{})
		shell.Drain(nil)
		unacked := heapInUse()
		b.ReportMetric(float64(unacked-before)/n-bodySize, "B/unacked-delivery")
		runtime.KeepAlive(bk)
	}
}

func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// newStreamBench declares a stream holding depth messages, read by one
// consumer of prefetch 100 that starts at the next offset.
func newStreamBench(tb testing.TB, depth int) (*sim.Broker, *sim.Channel, *sim.Consumer, sim.Message) {
	b := sim.New(sim.Config{NoTrace: true})
	msg := sim.Message{Body: make([]byte, 128)}
	ch, err := b.Connect("bench").Channel()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := ch.QueueDeclare("log", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "stream"}}); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < depth; i++ {
		if err := b.Publish("/", "", "log", msg); err != nil {
			tb.Fatal(err)
		}
	}
	if err := ch.Qos(100, 0, false); err != nil {
		tb.Fatal(err)
	}
	c, err := ch.Consume("log", sim.ConsumeOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return b, ch, c, msg
}

// BenchmarkStream measures publish → deliver → ack of one message on a
// stream whose log holds depth messages. Cost per message must not grow
// with depth.
func BenchmarkStream(b *testing.B) {
	for _, depth := range []int{0, 1e4, 1e5, 1e6} {
		b.Run(fmt.Sprint(depth), func(b *testing.B) {
			br, ch, c, msg := newStreamBench(b, depth)
			b.ReportAllocs()
			for b.Loop() {
				if err := br.Publish("/", "", "log", msg); err != nil {
					b.Fatal(err)
				}
				d, ok := c.Next()
				if !ok {
					b.Fatal("no delivery")
				}
				if err := ch.Ack(d.DeliveryTag, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
