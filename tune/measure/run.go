package measure

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/tune"
)

// Options describe one measurement on a real broker: a backlog of Messages
// in a fresh queue, then Consumers amqp091-go consumers, each on its own
// connection and channel, whose handlers sleep per Handler and ack.
type Options struct {
	// URL is the broker's AMQP URL; the setup (declare, publish, delete)
	// uses it directly.
	URL string
	// ConsumerAddr, when set, is the host:port the consumers dial instead
	// of the URL's: a Proxy's Addr.
	ConsumerAddr string
	Consumers    int
	Handler      tune.Dist
	Size         int
	Messages     int
	Prefetch     int
	Global       bool
	AckEvery     int // default 1; k > 1 acks every k-th with multiple
	Seed         uint64
	// Timeout bounds the consuming phase (default one minute).
	Timeout time.Duration
}

// Result is what a measurement saw.
type Result struct {
	Messages   int
	Duration   time.Duration // from the first basic.consume to the last handler's end
	Throughput float64       // messages per second
	Shares     []float64
	// HandlerTimes are the handlers' sleeps as they happened: a sleep
	// wakes 20–40 µs late here, more when the cores are busy. A
	// prediction of the run takes these (tune.Samples), as a user gives
	// their handler's measured times.
	HandlerTimes []time.Duration
}

// Run measures once. It declares a queue with a unique name, deletes it
// afterwards and closes every connection it opened.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Consumers <= 0 || o.Messages <= 0 {
		return Result{}, errors.New("measure: need consumers and messages")
	}
	if o.AckEvery <= 0 {
		o.AckEvery = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	// A precise sleep blocks its thread in the kernel while holding a Go
	// processor until the runtime takes it back; with GOMAXPROCS at the
	// core count (2 here), sleeping handlers and proxy writers starved
	// everything else and 8 consumers at prefetch 1 ran at half speed.
	if prev, want := runtime.GOMAXPROCS(0), 4*o.Consumers+8; prev < want {
		runtime.GOMAXPROCS(want)
		defer runtime.GOMAXPROCS(prev)
	}
	setup, err := amqp.Dial(o.URL)
	if err != nil {
		return Result{}, err
	}
	defer setup.Close()
	sch, err := setup.Channel()
	if err != nil {
		return Result{}, err
	}
	name := fmt.Sprintf("amqpsim-tune-%016x", rand.Uint64())
	if _, err := sch.QueueDeclare(name, false, false, false, false, nil); err != nil {
		return Result{}, err
	}
	// The queue goes even when the run fails; a fresh channel in case the
	// setup one was closed by an error.
	defer func() {
		if ch, err := setup.Channel(); err == nil {
			ch.QueueDelete(name, false, false, false)
			ch.Close()
		}
	}()
	if err := fill(ctx, sch, name, o.Messages, o.Size); err != nil {
		return Result{}, err
	}

	cfg := amqp.Config{Heartbeat: 10 * time.Second}
	if o.ConsumerAddr != "" {
		cfg.Dial = func(network, _ string) (net.Conn, error) { return net.Dial(network, o.ConsumerAddr) }
	}
	chans := make([]*amqp.Channel, o.Consumers)
	for i := range chans {
		c, err := amqp.DialConfig(o.URL, cfg)
		if err != nil {
			return Result{}, err
		}
		defer c.Close()
		if chans[i], err = c.Channel(); err != nil {
			return Result{}, err
		}
		if err := chans[i].Qos(o.Prefetch, 0, o.Global); err != nil {
			return Result{}, err
		}
	}

	var (
		total   atomic.Int64
		end     atomic.Int64 // unix nanoseconds of the last handler's end
		done    = make(chan struct{})
		handled = make([]int, o.Consumers)
		times   = make([][]time.Duration, o.Consumers)
		wg      sync.WaitGroup
	)
	start := time.Now()
	for i, ch := range chans {
		ds, err := ch.Consume(name, fmt.Sprintf("amqpsim-tune-%d", i+1), false, false, false, false, nil)
		if err != nil {
			return Result{}, err
		}
		wg.Go(func() {
			sl := NewSleeper()
			r := rand.New(rand.NewPCG(o.Seed, uint64(i)))
			n := 0
			for d := range ds {
				var slept time.Duration
				if h := o.Handler.Sample(r); h > 0 {
					began := time.Now()
					sl.Until(began.Add(h))
					slept = time.Since(began)
				}
				times[i] = append(times[i], slept)
				n++
				if n%o.AckEvery == 0 {
					d.Ack(o.AckEvery > 1)
				}
				handled[i]++
				if total.Add(1) == int64(o.Messages) {
					end.Store(time.Now().UnixNano())
					close(done)
				}
			}
		})
	}
	var runErr error
	select {
	case <-done:
	case <-time.After(o.Timeout):
		runErr = fmt.Errorf("measure: %d of %d messages handled after %v", total.Load(), o.Messages, o.Timeout)
	case <-ctx.Done():
		runErr = ctx.Err()
	}
	for _, ch := range chans {
		ch.Close() // ends the delivery channels: the handlers return
	}
	wg.Wait()
	if runErr != nil {
		return Result{}, runErr
	}
	res := Result{Messages: o.Messages, Duration: time.Duration(end.Load() - start.UnixNano())}
	res.Throughput = float64(o.Messages) / res.Duration.Seconds()
	for i, h := range handled {
		res.Shares = append(res.Shares, float64(h)/float64(o.Messages))
		res.HandlerTimes = append(res.HandlerTimes, times[i]...)
	}
	return res, nil
}

// fill publishes n messages of size bytes with publisher confirms and
// waits until the broker has confirmed them all.
func fill(ctx context.Context, ch *amqp.Channel, queue string, n, size int) error {
	if err := ch.Confirm(false); err != nil {
		return err
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, n))
	body := make([]byte, size)
	for range n {
		if err := ch.PublishWithContext(ctx, "", queue, false, false, amqp.Publishing{Body: body}); err != nil {
			return err
		}
	}
	timeout := time.After(time.Minute)
	for range n {
		select {
		case c := <-confirms:
			if !c.Ack {
				return fmt.Errorf("measure: the broker nacked message %d", c.DeliveryTag)
			}
		case <-timeout:
			return errors.New("measure: no publisher confirms within a minute")
		}
	}
	return nil
}

// RoundTrip returns the median time of n queue.declare (passive) round
// trips on a connection to addr ("" for the URL's own address).
func RoundTrip(url, addr string, n int) (time.Duration, error) {
	cfg := amqp.Config{}
	if addr != "" {
		cfg.Dial = func(network, _ string) (net.Conn, error) { return net.Dial(network, addr) }
	}
	c, err := amqp.DialConfig(url, cfg)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	ch, err := c.Channel()
	if err != nil {
		return 0, err
	}
	name := fmt.Sprintf("amqpsim-tune-rtt-%016x", rand.Uint64())
	if _, err := ch.QueueDeclare(name, false, true, false, false, nil); err != nil {
		return 0, err
	}
	defer ch.QueueDelete(name, false, false, false)
	var ts []time.Duration
	for range n {
		s := time.Now()
		if _, err := ch.QueueDeclarePassive(name, false, true, false, false, nil); err != nil {
			return 0, err
		}
		ts = append(ts, time.Since(s))
	}
	return median(ts), nil
}
