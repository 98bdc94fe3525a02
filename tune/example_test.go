package tune_test

import (
	"fmt"
	"time"

	"github.com/amqpsim/amqpsim/tune"
)

// Four consumers whose handlers take 5 ms, 2 ms from the broker: prefetch 1
// spends most of each cycle waiting for the next message, and a window of
// two already keeps every handler busy.
func Example() {
	res, err := tune.Sweep(tune.Config{
		Consumers: 4,
		Handler:   tune.Constant(5 * time.Millisecond),
		RTT:       2 * time.Millisecond,
		Size:      1024,
		Backlog:   20000,
		Prefetch:  []int{1, 2, 5, 10, 100},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range res.Points {
		fmt.Printf("prefetch %3d: %4.0f msg/s, up to %3d messages on the clients\n", p.Prefetch, p.Throughput, p.HeldPeak)
	}
	fmt.Println("recommended:", res.Recommended().Prefetch)
	// Output:
	// prefetch   1:  565 msg/s, up to   3 messages on the clients
	// prefetch   2:  800 msg/s, up to   7 messages on the clients
	// prefetch   5:  800 msg/s, up to  19 messages on the clients
	// prefetch  10:  800 msg/s, up to  39 messages on the clients
	// prefetch 100:  800 msg/s, up to 399 messages on the clients
	// recommended: 2
}
