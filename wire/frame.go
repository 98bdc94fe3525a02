package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/amqpsim/amqpsim/protocol"
)

// FrameType is the first octet of a frame.
type FrameType uint8

// Frame types. The 0-9-1 PDF says 4 for heartbeats; the XML and every
// implementation use 8.
const (
	FrameMethod    FrameType = 1
	FrameHeader    FrameType = 2
	FrameBody      FrameType = 3
	FrameHeartbeat FrameType = 8
)

// String returns "method", "header", "body", "heartbeat", or the number.
func (t FrameType) String() string {
	switch t {
	case FrameMethod:
		return "method"
	case FrameHeader:
		return "header"
	case FrameBody:
		return "body"
	case FrameHeartbeat:
		return "heartbeat"
	}
	return fmt.Sprintf("frame type %d", uint8(t))
}

const (
	// FrameEnd is the octet that ends every frame.
	FrameEnd = 0xCE
	// FrameOverhead is the size of a frame without its payload: type (1),
	// channel (2), size (4) and frame-end (1).
	FrameOverhead = 8
	// FrameMinSize is the frame-max every peer must accept, and the limit
	// before connection.tune negotiates another.
	FrameMinSize = 4096
)

// ProtocolHeader is what an AMQP 0-9-1 client sends first, and what a server
// sends back before closing when it does not like the client's.
var ProtocolHeader = [8]byte{'A', 'M', 'Q', 'P', 0, 0, 9, 1}

// Frame is one AMQP frame: type, channel and payload. Heartbeats have
// channel 0 and an empty payload.
type Frame struct {
	Type    FrameType
	Channel uint16
	Payload []byte
}

// AppendFrame appends f, with its size and frame-end octet, to dst. The
// payload must be shorter than 4 GiB.
func AppendFrame(dst []byte, f Frame) []byte {
	dst = append(dst, byte(f.Type))
	dst = binary.BigEndian.AppendUint16(dst, f.Channel)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(f.Payload)))
	dst = append(dst, f.Payload...)
	return append(dst, FrameEnd)
}

// AppendMethodFrame appends a method frame carrying m on channel to dst.
func AppendMethodFrame(dst []byte, channel uint16, m Method) ([]byte, error) {
	w := writer{buf: dst}
	at := w.beginFrame(FrameMethod, channel)
	if err := w.method(m); err != nil {
		return dst, err
	}
	w.endFrame(at)
	return w.buf, w.err
}

// AppendHeaderFrame appends a content header frame carrying h on channel to
// dst.
func AppendHeaderFrame(dst []byte, channel uint16, h *Header) ([]byte, error) {
	w := writer{buf: dst}
	at := w.beginFrame(FrameHeader, channel)
	w.header(h)
	w.endFrame(at)
	if w.err != nil {
		return dst, w.err
	}
	return w.buf, nil
}

// beginFrame appends a frame's type, channel and a size placeholder, and
// returns where the payload starts.
func (w *writer) beginFrame(t FrameType, channel uint16) int {
	w.octet(byte(t))
	w.short(channel)
	return w.reserveLen()
}

// endFrame patches the size of the frame whose payload started at at and
// appends the frame-end octet.
func (w *writer) endFrame(at int) {
	w.patchLen(at)
	w.octet(FrameEnd)
}

// FrameReader reads the protocol header and frames from a byte stream. It
// buffers its input. It is not safe for concurrent use.
type FrameReader struct {
	r       *bufio.Reader
	max     uint32
	scratch [8]byte
	buf     []byte
}

// NewFrameReader returns a FrameReader reading from r with a frame-max of
// [FrameMinSize], the limit before connection.tune.
func NewFrameReader(r io.Reader) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, 16<<10), max: FrameMinSize}
}

// SetFrameMax sets the largest frame, overhead included, that ReadFrame
// accepts; 0 means no limit. Call it with the frame-max negotiated in
// connection.tune-ok.
func (fr *FrameReader) SetFrameMax(frameMax uint32) { fr.max = frameMax }

// ReadProtocolHeader reads the 8-octet protocol header that opens a
// connection. It returns an error wrapping [ErrProtocolHeader] when the
// octets are not [ProtocolHeader], and the reader's error (io.EOF,
// io.ErrUnexpectedEOF, ...) when fewer than 8 arrive.
func (fr *FrameReader) ReadProtocolHeader() error {
	h := fr.scratch[:8]
	if _, err := io.ReadFull(fr.r, h); err != nil {
		return err
	}
	if !bytes.Equal(h, ProtocolHeader[:]) {
		return fmt.Errorf("wire: %w %q, want %q", ErrProtocolHeader, h, ProtocolHeader[:])
	}
	return nil
}

// ReadFrame reads the next frame. The payload aliases a buffer of the
// FrameReader and is valid only until the next call; the Decode functions
// copy what they keep.
//
// It returns io.EOF at a clean end of stream, io.ErrUnexpectedEOF inside a
// frame, and [*Error]s with code 501 FRAME_ERROR wrapping [ErrFrameType] for
// an unknown type, [ErrFrameTooLarge] for a frame over the frame-max (before
// reading its payload), and [ErrFrameEnd] for a bad frame-end octet.
func (fr *FrameReader) ReadFrame() (Frame, error) {
	h := fr.scratch[:7]
	if _, err := io.ReadFull(fr.r, h); err != nil {
		return Frame{}, err
	}
	f := Frame{Type: FrameType(h[0]), Channel: binary.BigEndian.Uint16(h[1:])}
	size := binary.BigEndian.Uint32(h[3:])
	switch f.Type {
	case FrameMethod, FrameHeader, FrameBody, FrameHeartbeat:
	default:
		return Frame{}, &Error{Code: protocol.FrameError, Channel: f.Channel, Err: ErrFrameType,
			Detail: fmt.Sprintf("type %d", h[0])}
	}
	if fr.max != 0 && uint64(size)+FrameOverhead > uint64(fr.max) {
		return Frame{}, &Error{Code: protocol.FrameError, Channel: f.Channel, Err: ErrFrameTooLarge,
			Detail: fmt.Sprintf("%s frame of %d bytes exceeds frame-max %d", f.Type, uint64(size)+FrameOverhead, fr.max)}
	}
	if err := fr.readPayload(size); err != nil {
		return Frame{}, noEOF(err)
	}
	end, err := fr.r.ReadByte()
	if err != nil {
		return Frame{}, noEOF(err)
	}
	if end != FrameEnd {
		return Frame{}, &Error{Code: protocol.FrameError, Channel: f.Channel, Err: ErrFrameEnd,
			Detail: fmt.Sprintf("got %#02x after a %s frame of %d payload bytes", end, f.Type, size)}
	}
	f.Payload = fr.buf
	return f, nil
}

// readPayload reads size bytes into fr.buf. Without a frame-max, it grows the
// buffer with the data actually received, so a forged size cannot make it
// allocate gigabytes up front.
func (fr *FrameReader) readPayload(size uint32) error {
	const chunk = 1 << 20
	n := int(size)
	if uint64(size) > math.MaxInt {
		n = math.MaxInt
	}
	if n <= cap(fr.buf) {
		fr.buf = fr.buf[:n]
		_, err := io.ReadFull(fr.r, fr.buf)
		return err
	}
	buf := fr.buf[:0]
	for len(buf) < n {
		m := min(n-len(buf), chunk)
		buf = append(buf, make([]byte, m)...)
		if _, err := io.ReadFull(fr.r, buf[len(buf)-m:]); err != nil {
			fr.buf = buf[:0]
			return err
		}
	}
	fr.buf = buf
	return nil
}

// noEOF turns io.EOF inside a frame into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// FrameWriter encodes frames and writes them to a stream, one Write call per
// method call, reusing one buffer. It splits bodies and checks every frame
// against the frame-max. It is not safe for concurrent use.
type FrameWriter struct {
	w   io.Writer
	max uint32
	enc writer
}

// NewFrameWriter returns a FrameWriter writing to w with a frame-max of
// [FrameMinSize], the limit before connection.tune.
func NewFrameWriter(w io.Writer) *FrameWriter {
	return &FrameWriter{w: w, max: FrameMinSize}
}

// SetFrameMax sets the largest frame, overhead included, that the writer
// produces; body frames are split to fit it. 0 means no limit. Call it with
// the frame-max negotiated in connection.tune-ok.
func (fw *FrameWriter) SetFrameMax(frameMax uint32) { fw.max = frameMax }

// WriteProtocolHeader writes [ProtocolHeader].
func (fw *FrameWriter) WriteProtocolHeader() error {
	_, err := fw.w.Write(ProtocolHeader[:])
	return err
}

// WriteFrame writes f. It returns an error wrapping [ErrFrameTooLarge],
// without writing, when f exceeds the frame-max.
func (fw *FrameWriter) WriteFrame(f Frame) error {
	if err := fw.check(f.Type, len(f.Payload)+FrameOverhead); err != nil {
		return err
	}
	fw.enc.buf = AppendFrame(fw.enc.buf[:0], f)
	return fw.flush()
}

// WriteHeartbeat writes a heartbeat frame: channel 0, empty payload.
func (fw *FrameWriter) WriteHeartbeat() error {
	return fw.WriteFrame(Frame{Type: FrameHeartbeat})
}

// WriteMethod writes a method frame carrying m on channel. Use WriteContent
// for methods with content.
func (fw *FrameWriter) WriteMethod(channel uint16, m Method) error {
	fw.reset()
	if err := fw.method(channel, m); err != nil {
		return err
	}
	return fw.flush()
}

// WriteContent writes a method that carries content (basic.deliver,
// basic.get-ok, basic.return, basic.publish), then its content header with
// props (nil means none) and body size, then body frames of at most
// [BodyFrameSize](frame-max) bytes, all in one Write call.
func (fw *FrameWriter) WriteContent(channel uint16, m Method, props *protocol.Properties, body []byte) error {
	if m != nil && !m.HasContent() {
		return fmt.Errorf("wire: write content with %s: %w", m.ID(), ErrNoContent)
	}
	fw.reset()
	if err := fw.method(channel, m); err != nil {
		return err
	}
	w := &fw.enc
	start := len(w.buf)
	at := w.beginFrame(FrameHeader, channel)
	h := Header{BodySize: uint64(len(body))}
	if props != nil {
		h.Properties = *props
	}
	w.header(&h)
	w.endFrame(at)
	if w.err != nil {
		return fmt.Errorf("wire: encode content header: %w", w.err)
	}
	if err := fw.check(FrameHeader, len(w.buf)-start); err != nil {
		return err
	}
	w.buf = AppendBodyFrames(w.buf, channel, body, fw.max)
	return fw.flush()
}

func (fw *FrameWriter) reset() {
	fw.enc.buf = fw.enc.buf[:0]
	fw.enc.err = nil
}

func (fw *FrameWriter) method(channel uint16, m Method) error {
	w := &fw.enc
	start := len(w.buf)
	at := w.beginFrame(FrameMethod, channel)
	if err := w.method(m); err != nil {
		return err
	}
	w.endFrame(at)
	if w.err != nil {
		return w.err
	}
	return fw.check(FrameMethod, len(w.buf)-start)
}

func (fw *FrameWriter) check(t FrameType, size int) error {
	if fw.max != 0 && uint64(size) > uint64(fw.max) {
		return fmt.Errorf("wire: %s frame of %d bytes exceeds frame-max %d: %w", t, size, fw.max, ErrFrameTooLarge)
	}
	return nil
}

func (fw *FrameWriter) flush() error {
	_, err := fw.w.Write(fw.enc.buf)
	return err
}
