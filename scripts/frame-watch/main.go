// Command frame-watch is a TCP proxy between AMQP 0-9-1 clients and a
// broker that reports every frame the broker sends on a channel after that
// channel's channel.close-ok, and before it is opened again: a client such
// as amqp091-go then closes the whole connection (504). RabbitMQ never
// sends one; it is how amqpsim's frames after close-ok were found under
// watermill-amqp's suite.
//
//	go run ./scripts/frame-watch -listen 127.0.0.1:5698 -target 127.0.0.1:5699
//
// Each such frame prints a line "frame after close-ok: ..." with the
// channel's last methods both ways; each connection that ends prints
// "connection ended: N frames after close-ok".
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"sync"

	"github.com/amqpsim/amqpsim/wire"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:5698", "the address clients dial")
	target := flag.String("target", "127.0.0.1:5672", "the broker's address")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("frame-watch listening on", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go proxy(c, *target)
	}
}

// history keeps each channel's recent methods, both ways, for a report.
type history struct {
	mu   sync.Mutex
	last map[uint16][]string
}

func (h *history) add(ch uint16, s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := append(h.last[ch], s)
	if len(l) > 8 {
		l = l[len(l)-8:]
	}
	h.last[ch] = l
}

func (h *history) of(ch uint16) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.last[ch], "; ")
}

func proxy(client net.Conn, target string) {
	defer client.Close()
	broker, err := net.Dial("tcp", target)
	if err != nil {
		log.Print(err)
		return
	}
	defer broker.Close()
	h := &history{last: map[uint16][]string{}}
	fromClient, toWatch := io.Pipe()
	go func() {
		_, _ = io.Copy(io.MultiWriter(broker, toWatch), client)
		toWatch.Close()
		broker.Close()
	}()
	go watchClient(fromClient, h)
	fromBroker, toWatchB := io.Pipe()
	done := make(chan int)
	go func() { done <- watchBroker(fromBroker, h) }()
	_, _ = io.Copy(io.MultiWriter(client, toWatchB), broker)
	toWatchB.Close()
	fmt.Printf("connection ended: %d frames after close-ok\n", <-done)
}

// watchClient records the client's methods.
func watchClient(r io.Reader, h *history) {
	defer io.Copy(io.Discard, r)
	fr := wire.NewFrameReader(r)
	fr.SetFrameMax(1 << 24)
	if fr.ReadProtocolHeader() != nil {
		return
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		if f.Type == wire.FrameMethod && f.Channel != 0 {
			if m, err := wire.DecodeMethod(f.Payload); err == nil {
				h.add(f.Channel, fmt.Sprintf("client %T", m))
			}
		}
	}
}

// watchBroker follows each channel's state from the broker's frames and
// reports those after close-ok; it returns how many there were.
func watchBroker(r io.Reader, h *history) int {
	defer io.Copy(io.Discard, r)
	fr := wire.NewFrameReader(r)
	fr.SetFrameMax(1 << 24)
	closed := map[uint16]bool{}
	n := 0
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return n
		}
		if f.Channel == 0 || f.Type == wire.FrameHeartbeat {
			continue
		}
		name := fmt.Sprintf("frame type %d", f.Type)
		if f.Type == wire.FrameMethod {
			m, err := wire.DecodeMethod(f.Payload)
			if err != nil {
				continue
			}
			name = fmt.Sprintf("%T", m)
			switch m.(type) {
			case *wire.ChannelOpenOk:
				closed[f.Channel] = false
			case *wire.ChannelCloseOk:
				closed[f.Channel] = true
				h.add(f.Channel, "broker "+name)
				continue
			}
			h.add(f.Channel, "broker "+name)
		}
		if closed[f.Channel] {
			n++
			fmt.Printf("frame after close-ok: %s on channel %d (%s)\n", name, f.Channel, h.of(f.Channel))
		}
	}
}
