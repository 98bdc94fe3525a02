// Command prefetch plays the two-consumer diagram on the simulator: a queue
// pushes deliveries to two consumers with a prefetch window of two each, an
// ack frees a slot that the next message takes, and a closed channel returns
// its deliveries, marked redelivered. It prints what each consumer holds at
// every step.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/amqpsim/amqpsim/sim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "prefetch:", err)
		os.Exit(1)
	}
}

func run() error {
	b := sim.New(sim.Config{})
	conn := b.Connect("app")
	ch1, err := conn.Channel()
	if err != nil {
		return err
	}
	ch2, err := conn.Channel()
	if err != nil {
		return err
	}
	if _, err := ch1.QueueDeclare("orders", sim.QueueOptions{}); err != nil {
		return err
	}
	held := map[string][]string{}
	var c1, c2 *sim.Consumer
	step := func(what string) {
		for _, c := range []*sim.Consumer{c1, c2} {
			if c == nil {
				continue
			}
			for _, d := range c.Deliveries() {
				label := string(d.Body)
				if d.Redelivered {
					label += "(redelivered)"
				}
				held[c.Tag()] = append(held[c.Tag()], label)
			}
		}
		st, _ := b.QueueStats("/", "orders")
		fmt.Printf("%-42s | consumer-1: %-26s | consumer-2: %-8s | ready=%d unacked=%d\n",
			what, strings.Join(held["consumer-1"], " "), strings.Join(held["consumer-2"], " "), st.Ready, st.Unacked)
	}
	for _, ch := range []*sim.Channel{ch1, ch2} {
		if err := ch.Qos(2, 0, false); err != nil {
			return err
		}
	}
	for i := 1; i <= 6; i++ {
		if err := b.Publish("/", "", "orders", sim.Message{Body: []byte(fmt.Sprintf("m%d", i))}); err != nil {
			return err
		}
	}
	step("publish m1..m6, no consumers yet")
	if c1, err = ch1.Consume("orders", sim.ConsumeOptions{Tag: "consumer-1"}); err != nil {
		return err
	}
	if c2, err = ch2.Consume("orders", sim.ConsumeOptions{Tag: "consumer-2"}); err != nil {
		return err
	}
	step("consume with prefetch 2 on two channels")
	if err := ch1.Ack(1, false); err != nil {
		return err
	}
	held["consumer-1"] = held["consumer-1"][1:]
	step("consumer-1 acks its first delivery")
	if err := ch2.Close(); err != nil {
		return err
	}
	held["consumer-2"] = nil
	step("consumer-2's channel closes")
	if err := ch1.Ack(0, true); err != nil {
		return err
	}
	held["consumer-1"] = nil
	step("consumer-1 acks everything it holds")
	return nil
}
